import { sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";

export type AttributeValue = string | number | boolean;

export interface CustomerAttributesRow {
  external_customer_id: string;
  attributes: Record<string, AttributeValue>;
  updated_at: Date;
}

/**
 * Merges attributes into the customer's (a `null` value removes one), creating the customer's
 * row on first use. One statement, so concurrent merges of different names both survive.
 * Undefined when the merge would leave more than `maxAttributes`: nothing is changed.
 */
export async function mergeAttributes(
  db: Executor,
  tenantId: string,
  externalCustomerId: string,
  changes: Record<string, AttributeValue | null>,
  maxAttributes: number,
): Promise<CustomerAttributesRow | undefined> {
  const patch = JSON.stringify(changes);
  const result = await sql<CustomerAttributesRow>`
    INSERT INTO customer_attributes (tenant_id, external_customer_id, attributes)
    VALUES (${tenantId}, ${externalCustomerId}, jsonb_strip_nulls(${patch}::jsonb))
    ON CONFLICT (tenant_id, external_customer_id) DO UPDATE
      SET attributes = jsonb_strip_nulls(customer_attributes.attributes || ${patch}::jsonb),
          updated_at = now()
      WHERE (
        SELECT count(*) FROM jsonb_object_keys(jsonb_strip_nulls(customer_attributes.attributes || ${patch}::jsonb))
      ) <= ${maxAttributes}
    RETURNING external_customer_id, attributes, updated_at`.execute(db);
  return result.rows[0];
}

export async function getAttributes(
  db: Executor,
  tenantId: string,
  externalCustomerId: string,
): Promise<Record<string, AttributeValue>> {
  const row = await db
    .selectFrom("customer_attributes")
    .select("attributes")
    .where("tenant_id", "=", tenantId)
    .where("external_customer_id", "=", externalCustomerId)
    .executeTakeFirst();
  return row?.attributes ?? {};
}
