import { sql } from "kysely";
import { type Executor, findRow } from "../../platform/db/index.js";

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
  const key = { tenant_id: tenantId, external_customer_id: externalCustomerId };
  const row = await findRow(db, "customer_attributes", key);
  return row?.attributes ?? {};
}

/** The attributes of each case's customer, by case id (cases without one are left out). */
export async function getAttributesOf(
  db: Executor,
  cases: Array<{ id: string; tenant_id: string; external_customer_id: string | null }>,
): Promise<Map<string, Record<string, AttributeValue>>> {
  const withCustomer = cases.filter((c) => c.external_customer_id !== null);
  if (withCustomer.length === 0) return new Map();
  const { rows } = await sql<{
    tenant_id: string;
    external_customer_id: string;
    attributes: Record<string, AttributeValue>;
  }>`
    SELECT a.tenant_id, a.external_customer_id, a.attributes
    FROM customer_attributes a
    JOIN unnest(${withCustomer.map((c) => c.tenant_id)}::uuid[], ${withCustomer.map((c) => c.external_customer_id)}::text[])
      AS q(tenant_id, external_customer_id)
      ON a.tenant_id = q.tenant_id AND a.external_customer_id = q.external_customer_id`.execute(db);
  const byCustomer = new Map(rows.map((r) => [`${r.tenant_id}/${r.external_customer_id}`, r.attributes]));
  const result = new Map<string, Record<string, AttributeValue>>();
  for (const c of withCustomer) {
    const attributes = byCustomer.get(`${c.tenant_id}/${c.external_customer_id}`);
    if (attributes) result.set(c.id, attributes);
  }
  return result;
}
