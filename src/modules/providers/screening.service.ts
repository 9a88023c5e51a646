import type { AppContext } from "../../platform/context.js";
import type { Executor } from "../../platform/db/index.js";
import { badRequest, notFound } from "../../platform/errors.js";
import { findCase } from "../cases/index.js";
import { subjectEntityIds } from "../entities/index.js";
import { insertAudit } from "../users/index.js";
import type { Broker, CaseSubject, ScreeningHit } from "./broker.js";
import { brokerOf } from "./brokers/index.js";
import { listRunsOfCase } from "./providers.repo.js";
import { caseSubjectOf } from "./providers.service.js";
import type { Verdict } from "./providers.tables.js";
import { insertReview, listActionsOfCase, listReviewsFor, type ReviewRow } from "./screening.repo.js";

// Screening review: an analyst's verdict on each hit a screening broker raised. A verdict is
// remembered for the entity of the case's subject, so that a rescreen or a later case of the
// same customer reports a hit already found not to be them under `dismissedHits`, not `results`,
// and counts in `unreviewedHits` only the hits nobody marked.

export const VERDICTS: readonly Verdict[] = ["match", "no_match"];
const MAX_REASON = 2000;

/** Who reviews: the tenant and the audit log's label of the user (`analyst:<userId>`). */
export interface Reviewer {
  tenantId: string;
  actor: string;
}

/** A verdict as the case page shows it. */
export interface ReviewView {
  brokerId: string;
  hitId: string;
  name: string;
  verdict: Verdict;
  reason: string;
  actor: string;
  at: string;
  /** The case it was made on (another case of the same entity, or this one). */
  caseId: string;
}

/** One screening of the case: a node's or a rescreen's hits, with where they came from. */
export interface Screening {
  brokerId: string;
  /** `node:<nodeId>` for the workflow's node, else the actor of the rescreen. */
  by: string;
  at: string;
  hits: ScreeningHit[];
}

export interface CaseScreenings {
  /** The case's subject, beside which the hits are shown. */
  subject: Record<string, unknown>;
  /** The newest screening of each screening broker that ran on the case. */
  latest: Screening[];
  /** The verdict that holds for each hit, by broker and hit id (`<brokerId>/<hitId>`). */
  verdicts: Map<string, ReviewView>;
  /** Every verdict on the subject's hits, newest first. */
  history: ReviewView[];
  /** The ids of the entities the verdicts made on this case are remembered for. */
  entityIds: string[];
}

/** A case as screening reads it (a row of the cases table, or the engine's view of it). */
export interface SubjectRow {
  id: string;
  type: string;
  subject: Record<string, unknown>;
  external_customer_id: string | null;
}

function scopeOf(tenantId: string, row: SubjectRow) {
  return { caseId: row.id, entityIds: subjectEntityIds(tenantId, row.subject, row.external_customer_id) };
}

function reviewView(row: ReviewRow): ReviewView {
  return {
    brokerId: row.broker_id,
    hitId: row.hit_id,
    name: typeof row.hit.name === "string" ? row.hit.name : row.hit_id,
    verdict: row.verdict,
    reason: row.reason,
    actor: row.actor,
    at: row.created_at.toISOString(),
    caseId: row.case_id,
  };
}

/** The verdict that holds for each hit (the newest), by `<brokerId>/<hitId>`. */
function verdictsOf(rows: readonly ReviewRow[]): Map<string, ReviewView> {
  return new Map(rows.map((r) => [`${r.broker_id}/${r.hit_id}`, reviewView(r)]));
}

/**
 * The case as a broker sees it, with the verdicts on its subject's hits when the broker screens
 * (read with no transaction open, before the vendor is called).
 */
export async function screenedSubject(
  db: Executor,
  tenantId: string,
  broker: Broker,
  row: SubjectRow,
): Promise<CaseSubject> {
  if (!broker.hitsOf) return caseSubjectOf(row);
  const reviews = await listReviewsFor(db, tenantId, scopeOf(tenantId, row), broker.id);
  return caseSubjectOf(row, new Map([...verdictsOf(reviews).values()].map((v) => [v.hitId, v.verdict])));
}

/** Every screening of the case, newest first: its nodes' runs and its kept rescreens. */
async function screeningsOf(db: Executor, tenantId: string, caseId: string): Promise<Screening[]> {
  const [runs, actions] = await Promise.all([
    listRunsOfCase(db, tenantId, caseId),
    listActionsOfCase(db, tenantId, caseId, 50),
  ]);
  const screenings: Screening[] = [];
  for (const run of runs) {
    const hitsOf = brokerOf(run.broker_id)?.hitsOf;
    if (hitsOf && run.status === "completed" && run.output) {
      const at = run.updated_at.toISOString();
      screenings.push({ brokerId: run.broker_id, by: `node:${run.node_id}`, at, hits: hitsOf(run.output) });
    }
  }
  for (const action of actions) {
    const hitsOf = brokerOf(action.broker_id)?.hitsOf;
    if (hitsOf && action.outcome === "ok" && action.output) {
      const at = action.created_at.toISOString();
      screenings.push({ brokerId: action.broker_id, by: action.actor, at, hits: hitsOf(action.output) });
    }
  }
  return screenings.sort((a, b) => b.at.localeCompare(a.at));
}

/** What the case page shows of screening: the newest hits of each broker and their verdicts. */
export async function getCaseScreenings(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<CaseScreenings | undefined> {
  const row = await findCase(ctx.db.root, tenantId, caseId);
  if (!row) return undefined;
  const screenings = await screeningsOf(ctx.db.root, tenantId, caseId);
  if (screenings.length === 0) return undefined;
  const scope = scopeOf(tenantId, row);
  const reviews = await listReviewsFor(ctx.db.root, tenantId, scope);
  const latest = screenings.filter((s, i) => screenings.findIndex((o) => o.brokerId === s.brokerId) === i);
  return {
    subject: row.subject,
    latest,
    verdicts: verdictsOf(reviews),
    history: reviews.map(reviewView).reverse(),
    entityIds: scope.entityIds,
  };
}

/**
 * An analyst's verdict on a hit of the case, remembered for the entity of its subject (its
 * customer, else its first identifier; for the case alone when it has none), with its audit
 * row in the same transaction. 400 for a missing verdict or reason, 404 for another tenant's
 * case or a hit the case's screenings did not raise.
 */
export async function reviewHit(
  ctx: AppContext,
  who: Reviewer,
  caseId: string,
  input: { brokerId: string; hitId: string; verdict: string; reason: string },
): Promise<ReviewView> {
  const reason = input.reason.trim();
  const problems = [
    ...((VERDICTS as readonly string[]).includes(input.verdict)
      ? []
      : [{ path: "verdict", message: "Choose “match” or “no match”." }]),
    ...(reason.length === 0 || reason.length > MAX_REASON
      ? [{ path: "reason", message: `A reason of 1 to ${MAX_REASON} characters is required.` }]
      : []),
  ];
  if (problems.length > 0) throw badRequest("the review is not complete", problems);
  const row = await findCase(ctx.db.root, who.tenantId, caseId);
  if (!row) throw notFound("case");
  const screenings = await screeningsOf(ctx.db.root, who.tenantId, caseId);
  const hit = screenings
    .filter((s) => s.brokerId === input.brokerId)
    .flatMap((s) => s.hits)
    .find((h) => h.id === input.hitId);
  if (!hit) throw notFound(`hit "${input.hitId}" of ${input.brokerId} on this case`);
  const scope = scopeOf(who.tenantId, row);
  const before = verdictsOf(await listReviewsFor(ctx.db.root, who.tenantId, scope, input.brokerId)).get(
    `${input.brokerId}/${hit.id}`,
  );
  const verdict = input.verdict as Verdict;
  const entityId = scope.entityIds[0] ?? null;
  return ctx.db.transaction(async (tx) => {
    const saved = await insertReview(tx, who.tenantId, {
      caseId,
      entityId,
      brokerId: input.brokerId,
      hitId: hit.id,
      verdict,
      reason,
      actor: who.actor,
      hit: { ...hit },
    });
    await insertAudit(tx, who, "screening.review", `case:${caseId}`, {
      ...(before ? { before: { verdict: before.verdict, reason: before.reason } } : {}),
      after: { brokerId: input.brokerId, hitId: hit.id, name: hit.name, verdict, reason, entityId },
    });
    return reviewView(saved);
  });
}
