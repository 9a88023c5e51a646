import type { AppContext } from "../../platform/context.js";
import { badRequest, type ErrorDetail } from "../../platform/errors.js";
import { type AuditBy, insertAudit } from "../users/index.js";
import { type AttributeValue, getAttributes, mergeAttributes } from "./attributes.repo.js";

export const MAX_ATTRIBUTES = 200;
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_STRING_BYTES = 1024;

export interface AttributesView {
  externalCustomerId: string;
  attributes: Record<string, AttributeValue>;
  updatedAt: string;
}

/**
 * Merges scalar attributes into a customer's (a `null` removes one). Names are identifiers, so
 * workflows read them as `customer.attributes.<name>`. The audit row (`customer.attributes`, by
 * `by`) commits with the merge: the sent names' values before and after.
 */
export async function setCustomerAttributes(
  ctx: AppContext,
  by: AuditBy,
  externalCustomerId: string,
  attributes: Record<string, unknown>,
): Promise<AttributesView> {
  const { tenantId } = by;
  const problems: ErrorDetail[] = [];
  const entries = Object.entries(attributes);
  if (entries.length > MAX_ATTRIBUTES) {
    problems.push({ path: "attributes", message: `must have at most ${MAX_ATTRIBUTES} attributes` });
  }
  for (const [name, value] of entries) {
    const path = `attributes.${name}`;
    if (!NAME.test(name)) {
      problems.push({
        path,
        message: "name must match ^[A-Za-z_][A-Za-z0-9_]*$ and be at most 64 characters",
      });
    }
    if (value !== null && !["string", "number", "boolean"].includes(typeof value)) {
      problems.push({ path, message: "must be a string, number, boolean or null" });
    } else if (typeof value === "number" && !Number.isFinite(value)) {
      problems.push({ path, message: "must be a finite number" });
    } else if (typeof value === "string" && Buffer.byteLength(value) > MAX_STRING_BYTES) {
      problems.push({ path, message: `must be at most ${MAX_STRING_BYTES} bytes` });
    }
  }
  if (problems.length > 0) {
    throw badRequest(
      `invalid attributes: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`,
      problems,
    );
  }
  const row = await ctx.db.transaction(async (tx) => {
    const current = await getAttributes(tx, tenantId, externalCustomerId);
    const merged = await mergeAttributes(
      tx,
      tenantId,
      externalCustomerId,
      attributes as Record<string, AttributeValue | null>,
      MAX_ATTRIBUTES,
    );
    if (merged) {
      const names = Object.keys(attributes);
      await insertAudit(tx, by, "customer.attributes", `customer:${externalCustomerId}`, {
        before: Object.fromEntries(names.map((n) => [n, current[n] ?? null])),
        after: Object.fromEntries(names.map((n) => [n, merged.attributes[n] ?? null])),
      });
    }
    return merged;
  });
  if (!row) {
    throw badRequest(
      `a customer has at most ${MAX_ATTRIBUTES} attributes; remove some (set them to null) first`,
      [{ path: "attributes", message: `would leave more than ${MAX_ATTRIBUTES} attributes` }],
    );
  }
  return {
    externalCustomerId: row.external_customer_id,
    attributes: row.attributes,
    updatedAt: row.updated_at.toISOString(),
  };
}
