import type { Selectable } from "kysely";
import { type Executor, json, jsonOrNull } from "../../platform/db/index.js";
import type { ProviderActionsTable, ScreeningReviewsTable, Verdict } from "./providers.tables.js";

export type ReviewRow = Selectable<ScreeningReviewsTable>;
export type ActionRow = Selectable<ProviderActionsTable>;

export interface NewReview {
  caseId: string;
  entityId: string | null;
  brokerId: string;
  hitId: string;
  verdict: Verdict;
  reason: string;
  actor: string;
  hit: Record<string, unknown>;
}

export async function insertReview(db: Executor, tenantId: string, review: NewReview): Promise<ReviewRow> {
  return db
    .insertInto("screening_reviews")
    .values({
      tenant_id: tenantId,
      case_id: review.caseId,
      entity_id: review.entityId,
      broker_id: review.brokerId,
      hit_id: review.hitId,
      verdict: review.verdict,
      reason: review.reason,
      actor: review.actor,
      hit: json(review.hit),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The verdicts that hold for a case's subject, oldest first: those remembered for its entities
 * (made on any case of theirs), and those made on the case itself.
 */
export function listReviewsFor(
  db: Executor,
  tenantId: string,
  scope: { caseId: string; entityIds: readonly string[] },
  brokerId?: string,
): Promise<ReviewRow[]> {
  let query = db
    .selectFrom("screening_reviews")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where((eb) =>
      eb.or([
        eb("case_id", "=", scope.caseId),
        ...(scope.entityIds.length > 0 ? [eb("entity_id", "in", [...scope.entityIds])] : []),
      ]),
    );
  if (brokerId !== undefined) query = query.where("broker_id", "=", brokerId);
  return query.orderBy("id").execute();
}

export interface NewAction {
  caseId: string;
  brokerId: string;
  runId: string | null;
  kind: "pending" | "durable";
  action: string;
  actor: string;
  outcome: "ok" | "failed";
  output: Record<string, unknown> | null;
  error: string | null;
}

export async function insertAction(db: Executor, tenantId: string, action: NewAction): Promise<void> {
  await db
    .insertInto("provider_actions")
    .values({
      tenant_id: tenantId,
      case_id: action.caseId,
      broker_id: action.brokerId,
      run_id: action.runId,
      kind: action.kind,
      action: action.action,
      actor: action.actor,
      outcome: action.outcome,
      output: jsonOrNull(action.output),
      error: action.error,
    })
    .execute();
}

/** The actions run on a case's providers, newest first. */
export function listActionsOfCase(
  db: Executor,
  tenantId: string,
  caseId: string,
  limit: number,
): Promise<ActionRow[]> {
  return db
    .selectFrom("provider_actions")
    .selectAll()
    .where("tenant_id", "=", tenantId)
    .where("case_id", "=", caseId)
    .orderBy("id", "desc")
    .limit(limit)
    .execute();
}
