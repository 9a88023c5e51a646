import { sql } from "kysely";
import type { Db } from "../../src/platform/db/index.js";

/**
 * `count` past cases of the workflow `pay` version 1 (amountScreen: review over 1,000), the i-th
 * of amount i % 2000, accepted in the last `count` seconds, as the engine leaves them: decided by
 * the workflow, with their two steps. Written in two statements: going through the engine would
 * only make the tests slower, and the engine's own recording is tested elsewhere.
 */
export async function pastCases(db: Db, tenantId: string, count: number): Promise<void> {
  await sql`
    INSERT INTO cases (id, tenant_id, request_id, status, type, workflow_id, workflow_version, subject,
                       payload, metadata, decision, decision_history, step_seq, created_at, updated_at)
    SELECT gen_random_uuid(), ${tenantId}::uuid, gen_random_uuid()::text,
           CASE WHEN i % 2000 > 1000 THEN 'in_review' ELSE 'decided' END, 'KYC', 'pay', 1,
           '{"displayName": "Ada"}'::jsonb, jsonb_build_object('amount', i % 2000), '{}'::jsonb, d.entry,
           jsonb_build_array(d.entry), 2, now() - make_interval(secs => ${count}::int - i), now()
    FROM generate_series(0, ${count - 1}::int) AS i
    CROSS JOIN LATERAL (
      SELECT jsonb_build_object('value', CASE WHEN i % 2000 > 1000 THEN 'in_review' ELSE 'approved' END,
                                'source', 'workflow', 'actor', 'node:screen',
                                'decidedAt', now()) AS entry
    ) d`.execute(db.root);
  await sql`
    INSERT INTO case_steps (tenant_id, case_id, seq, node_id, node_type, status, output, next_node_id,
                            explain, created_at, finished_at)
    SELECT c.tenant_id, c.id, s.seq, s.node_id, s.node_type, 'completed', '{}'::jsonb, s.next,
           '{}'::jsonb, c.created_at, c.created_at
    FROM cases c
    CROSS JOIN LATERAL (VALUES
      (1, 'screen', 'rules', CASE WHEN c.status = 'in_review' THEN 'review' ELSE 'approve' END),
      (2, CASE WHEN c.status = 'in_review' THEN 'review' ELSE 'approve' END, 'decision', NULL)
    ) AS s(seq, node_id, node_type, next)
    WHERE c.tenant_id = ${tenantId}::uuid
      AND NOT EXISTS (SELECT 1 FROM case_steps o WHERE o.case_id = c.id)`.execute(db.root);
}
