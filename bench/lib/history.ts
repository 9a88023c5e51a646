import { sql } from "kysely";
import { entityId } from "../../src/modules/entities/keys.js";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { Db } from "../../src/platform/db/index.js";

// A tenant's past: Transaction cases between customers and receivers' IBANs, written straight
// into the service's own tables (`cases`, `entities`, `case_entities`) as the statement that
// accepts a case writes them, in a few set-based statements instead of a million submissions.

export interface HistoryShape {
  /** Past cases in all, the hot keys' included. */
  cases: number;
  /** Ordinary customers (`cust-000000` …), among whom the cases that are not the hot keys' are spread. */
  customers: number;
  /** Receivers' IBANs, drawn at random for every case. */
  ibans: number;
  /** Hot customers (`hot-1` …), each with `hotCases` cases. */
  hotKeys: number;
  hotCases: number;
  /** The cases' times are spread evenly over this many days up to now. */
  days: number;
}

export const customerKey = (n: number) => `cust-${String(n).padStart(6, "0")}`;
export const hotKey = (n: number) => `hot-${n + 1}`;
export const ibanKey = (n: number) => `NL00BENC${String(n).padStart(10, "0")}`;

/**
 * A Transaction case's subject, from the sender (a customer) to the receiver (an IBAN): the shape
 * the seeded cases have too, so that both resolve to the same entities.
 */
export function transactionSubject(customer: string, iban: string, amount: number) {
  return {
    transaction: {
      amount,
      currency: "EUR",
      parties: [
        { role: "sender", identifiers: [{ type: "external_customer_id", value: customer }] },
        { role: "receiver", identifiers: [{ type: "iban", value: iban }] },
      ],
    },
  };
}

/**
 * The id `entityId` derives, computed by PostgreSQL: the SHA-256 of tenant, type and value (NUL
 * separated) as a version 8 UUID. `seedHistory` checks a sample against `entityId` itself.
 */
const ENTITY_ID = (tenant: string) => sql`(
  SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-8' || substr(h, 14, 3) || '-' ||
          to_hex(((('x' || substr(h, 17, 1))::bit(4)::int) & 3) | 8) || substr(h, 18, 3) || '-' ||
          substr(h, 21, 12))::uuid
  FROM (SELECT encode(sha256(convert_to(${tenant}::text, 'UTF8') || '\\x00'::bytea || convert_to(k.type, 'UTF8')
                             || '\\x00'::bytea || convert_to(k.value, 'UTF8')), 'hex') AS h) AS digest)`;

/**
 * Writes the tenant's history: `shape.cases` decided Transaction cases (every column but the
 * generated ones copied from `templateCaseId`, a case the service itself accepted and decided
 * with the same workflow), their customers' and IBANs' entities, and one `case_entities` row per
 * case and entity with the case's other entity as its peer, in the order of the cases' times as
 * the service would have written them.
 * The cases are written at fillfactor 100, as before migration 0031 (decision 0036).
 * Then VACUUM ANALYZE, as autovacuum would have done over 90 days, and a checkpoint. Returns the
 * seconds it took.
 */
export async function seedHistory(
  db: Db,
  tenantId: string,
  templateCaseId: string,
  shape: HistoryShape,
): Promise<number> {
  const started = performance.now();
  const hotTotal = shape.hotKeys * shape.hotCases;
  if (hotTotal > shape.cases) throw new Error("the hot keys' cases outnumber the history's");
  await db.root.transaction().execute(async (tx) => {
    // The history as a deployment holds it that wrote it before migration 0031 (decision 0036):
    // pages packed with decided cases, each left with less room than a decided case needs. It is
    // written at fillfactor 100 for that, as the migration leaves existing pages as they are,
    // then the table's own setting is put back for the live cases.
    const { rows: options } = await sql<{ reloptions: string[] | null }>`
      SELECT reloptions FROM pg_class WHERE oid = 'cases'::regclass`.execute(tx);
    const fillfactor = options[0]?.reloptions
      ?.find((o) => o.startsWith("fillfactor="))
      ?.slice("fillfactor=".length);
    await sql`ALTER TABLE cases SET (fillfactor = 100)`.execute(tx);
    await sql`
      CREATE TEMP TABLE bench_history ON COMMIT DROP AS
      SELECT gen_random_uuid() AS id,
             CASE WHEN g <= ${hotTotal}
                  THEN 'hot-' || ((g - 1) % ${Math.max(1, shape.hotKeys)} + 1)
                  ELSE 'cust-' || lpad(floor(random() * ${shape.customers})::int::text, 6, '0') END AS customer,
             'NL00BENC' || lpad(floor(random() * ${shape.ibans})::int::text, 10, '0') AS iban,
             round((1 + random() * 999)::numeric, 2)::double precision AS amount,
             date_trunc('milliseconds', now() - interval '2 seconds'
                                              - random() * ${`${shape.days} days`}::interval) AS t
      FROM generate_series(1, ${shape.cases}) AS g`.execute(tx);
    await sql`ANALYZE bench_history`.execute(tx);
    await sql`
      INSERT INTO cases (id, tenant_id, request_id, status, type, workflow_id, workflow_version, subject,
                         payload, metadata, external_customer_id, event_timestamp, idempotency_key, dry_run,
                         decision, decision_history, workflow_result, current_node_id, step_seq, node_outputs,
                         created_at, updated_at)
      SELECT h.id, tpl.tenant_id, gen_random_uuid()::text, tpl.status, tpl.type, tpl.workflow_id,
             tpl.workflow_version,
             json_build_object('transaction', json_build_object(
               'amount', h.amount, 'currency', 'EUR', 'parties', json_build_array(
                 json_build_object('role', 'sender', 'identifiers', json_build_array(
                   json_build_object('type', 'external_customer_id', 'value', h.customer))),
                 json_build_object('role', 'receiver', 'identifiers', json_build_array(
                   json_build_object('type', 'iban', 'value', h.iban)))))),
             tpl.payload, tpl.metadata, h.customer, h.t, NULL, false,
             jsonb_set(tpl.decision, '{decidedAt}', to_jsonb(h.t), false),
             jsonb_build_array(jsonb_set(tpl.decision, '{decidedAt}', to_jsonb(h.t), false)),
             tpl.workflow_result, tpl.current_node_id, tpl.step_seq, tpl.node_outputs, h.t, h.t
      FROM bench_history h CROSS JOIN (SELECT * FROM cases WHERE id = ${templateCaseId}) tpl
      ORDER BY h.t`.execute(tx);
    await (fillfactor === undefined
      ? sql`ALTER TABLE cases RESET (fillfactor)`
      : sql`ALTER TABLE cases SET (fillfactor = ${sql.raw(String(Number(fillfactor)))})`
    ).execute(tx);
    await sql`
      CREATE TEMP TABLE bench_entity ON COMMIT DROP AS
      SELECT k.type, k.value, k.first, ${ENTITY_ID(tenantId)} AS id
      FROM (SELECT 'customer'::text AS type, customer AS value, min(t) AS first FROM bench_history GROUP BY customer
            UNION ALL
            SELECT 'iban', iban, min(t) FROM bench_history GROUP BY iban) AS k`.execute(tx);
    await sql`ANALYZE bench_entity`.execute(tx);
    await sql`
      INSERT INTO entities (id, tenant_id, type, value, first_seen_at)
      SELECT id, ${tenantId}::uuid, type, value, first FROM bench_entity ORDER BY first
      ON CONFLICT (tenant_id, type, value) DO NOTHING`.execute(tx);
    // Each case's two links carry each other as their peer (migration 0020's `entity_peer`).
    await sql`
      INSERT INTO case_entities
        (case_id, entity_id, tenant_id, entity_type, role, case_time, accepted_at, case_type, amount, currency, peers)
      SELECT id, entity_id, ${tenantId}::uuid, type, role, t, t, 'Transaction', amount, 'EUR', ARRAY[peer]
      FROM (SELECT h.id, c.id AS entity_id, c.type, 'sender' AS role, h.t, h.amount,
                   entity_peer(i.id, i.type) AS peer
            FROM bench_history h
            JOIN bench_entity c ON c.type = 'customer' AND c.value = h.customer
            JOIN bench_entity i ON i.type = 'iban' AND i.value = h.iban
            UNION ALL
            SELECT h.id, i.id, i.type, 'receiver', h.t, h.amount, entity_peer(c.id, c.type)
            FROM bench_history h
            JOIN bench_entity c ON c.type = 'customer' AND c.value = h.customer
            JOIN bench_entity i ON i.type = 'iban' AND i.value = h.iban) AS link
      ORDER BY t, type`.execute(tx);
  });
  // The ids must be the service's own, or no live case would find its history.
  const { rows } = await sql<{ id: string; type: string; value: string }>`
    SELECT id, type, value FROM entities WHERE tenant_id = ${tenantId} ORDER BY random() LIMIT 50`.execute(
    db.root,
  );
  const wrong = rows.filter((r) => r.id !== entityId(tenantId, r.type, r.value));
  if (rows.length === 0 || wrong.length > 0)
    throw new Error(`seeded entity ids differ from entityId(): ${JSON.stringify(wrong[0] ?? "none seeded")}`);
  await sql`VACUUM ANALYZE cases`.execute(db.root);
  await sql`VACUUM ANALYZE entities`.execute(db.root);
  await sql`VACUUM ANALYZE case_entities`.execute(db.root);
  // The seeding's WAL would otherwise bring a checkpoint in the middle of the measurement.
  await sql`CHECKPOINT`.execute(db.root);
  return (performance.now() - started) / 1000;
}

/** How many of a key's cases lie in the windows ending now: what its figures read. */
export async function keyWindows(
  db: Db,
  tenantId: string,
  type: string,
  value: string,
): Promise<{ total: number; hour: number; week: number; month: number }> {
  const { rows } = await sql<{ total: string; hour: string; week: string; month: string }>`
    SELECT count(*) AS total,
           count(*) FILTER (WHERE case_time > now() - interval '1 hour') AS hour,
           count(*) FILTER (WHERE case_time > now() - interval '7 days') AS week,
           count(*) FILTER (WHERE case_time > now() - interval '30 days') AS month
    FROM case_entities WHERE entity_id = ${entityId(tenantId, type, value)}`.execute(db.root);
  const r = rows[0];
  return { total: Number(r?.total), hour: Number(r?.hour), week: Number(r?.week), month: Number(r?.month) };
}

/** The block list the history workflow's rules node reads. */
export const LIST_ID = "blocked_ibans";

/**
 * The workflow: three figures by customer, the receiver's IBAN in the block list, the decision.
 * `withFigures` false leaves the aggregate node out (and the rule that reads it), so that what the
 * figures cost a case can be told from what its links and the list cost it (BENCH_HISTORY_FIGURES).
 */
export function historyWorkflow(withList: boolean, withFigures = true): WorkflowDefinition {
  const figures: WorkflowDefinition["nodes"] = [
    {
      id: "history",
      type: "aggregate",
      next: "screen",
      aggregates: {
        payments1h: { function: "count", by: "customer", window: "PT1H" },
        amount7d: { function: "sum", field: "amount", by: "customer", window: "P7D" },
        ibans30d: { function: "countDistinct", by: "customer", distinct: "iban", window: "P30D" },
      },
    },
  ];
  return {
    inputSchema: { type: "object" },
    start: withFigures ? "history" : "screen",
    nodes: [
      ...(withFigures ? figures : []),
      {
        id: "screen",
        type: "rules",
        rules: [
          ...(withList
            ? [
                {
                  when: `inList("${LIST_ID}", subject.transaction.parties[1].identifiers[0].value)`,
                  next: "decline",
                },
              ]
            : []),
          {
            when: withFigures
              ? "nodes.history.payments1h > 100 || nodes.history.amount7d > 1000000.0 || nodes.history.ibans30d > 5000"
              : "subject.transaction.amount > 1000000.0",
            next: "review",
          },
        ],
        default: "approve",
      },
      { id: "approve", type: "decision", decision: "approved", output: { reason: "'screened'" } },
      { id: "review", type: "decision", decision: "in_review", output: { reason: "'velocity'" } },
      ...(withList
        ? [{ id: "decline", type: "decision", decision: "declined", output: { reason: "'blocked IBAN'" } }]
        : []),
    ],
  };
}
