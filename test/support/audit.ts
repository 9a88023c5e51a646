import { sql } from "kysely";
import type { AppContext } from "../../src/platform/context.js";

/**
 * A trigger that fails the audit row of one action of one tenant: the failure comes after the
 * change, in its transaction. Returns what drops it again.
 */
export async function failAuditOf(
  ctx: Pick<AppContext, "db">,
  tenantId: string,
  action: string,
): Promise<() => Promise<void>> {
  const name = `fail_${tenantId.replaceAll("-", "")}`;
  await sql
    .raw(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected failure after the change'; END $$;
    CREATE TRIGGER ${name} BEFORE INSERT ON console_audit FOR EACH ROW
      WHEN (NEW.tenant_id = '${tenantId}' AND NEW.action = '${action}') EXECUTE FUNCTION ${name}();`)
    .execute(ctx.db.root);
  return async () => {
    await sql.raw(`DROP TRIGGER ${name} ON console_audit; DROP FUNCTION ${name}();`).execute(ctx.db.root);
  };
}
