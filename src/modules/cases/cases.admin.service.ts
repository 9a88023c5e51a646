import type { AppContext } from "../../platform/context.js";
import { AppError, notFound } from "../../platform/errors.js";
import { type CaseStatus, type DecisionEntry, type DecisionValue, isTerminal } from "../case-model/index.js";
import { insertAudit } from "../users/index.js";
import { emitEvent } from "../webhooks/index.js";
import { decisionEvent } from "./case-events.js";
import { findCaseAnyTenant, listCasesForOperator, updateCase } from "./cases.repo.js";
import {
  type AdminCaseRecordView,
  adminCaseRecord,
  type CaseListQuery,
  type CaseRecordView,
  caseRecord,
  caseSummary,
  pageOf,
  parseListQuery,
} from "./cases.service.js";

/**
 * An analyst's override: a new current decision appended to the history, `workflow_result`
 * untouched, and `case.decision_overridden` in the same transaction. `auditActor` is who the audit
 * row names: the console's user (`analyst:<userId>`), or `operator:<actor>` for the operator API.
 */
export async function overrideDecision(
  ctx: AppContext,
  caseId: string,
  input: {
    value: DecisionValue;
    actor: string;
    reason?: string;
    /** How many decisions the case had when the analyst looked: another since then is a 409. */
    basedOn?: number;
  },
  auditActor: string,
): Promise<CaseRecordView> {
  return ctx.db.transaction(async (tx) => {
    const row = await findCaseAnyTenant(tx, caseId, true);
    if (!row) throw notFound("case");
    if (isTerminal(row.status as CaseStatus)) throw new AppError("conflict", `the case is ${row.status}`);
    if (!row.decision)
      throw new AppError("conflict", "the case has no decision yet: the workflow is still running");
    if (input.basedOn !== undefined && input.basedOn !== row.decision_history.length) {
      const latest = row.decision;
      throw new AppError(
        "conflict",
        `The decision changed while you were looking: it is now ${latest.value.replaceAll("_", " ")} (by ${latest.actor} at ${latest.decidedAt}). Your override was not recorded; reload the case and decide again.`,
      );
    }
    const now = new Date();
    const entry: DecisionEntry = {
      value: input.value,
      source: "analyst",
      actor: `analyst:${input.actor}`,
      decidedAt: now.toISOString(),
      ...(input.reason ? { reason: input.reason } : {}),
    };
    const history = [...row.decision_history, entry];
    const status = input.value === "in_review" ? "in_review" : "decided";
    await updateCase(tx, row.tenant_id, row.id, {
      status,
      decision: JSON.stringify(entry),
      decision_history: JSON.stringify(history),
    });
    // Whatever the door (console, operator API, CLI), the audit row commits with the override.
    await insertAudit(tx, { tenantId: row.tenant_id, actor: auditActor }, "case.override", `case:${row.id}`, {
      before: { status: row.status, decision: row.decision },
      after: { status, decision: entry },
    });
    const result = { decision: entry, decisionHistory: history, workflow_result: row.workflow_result };
    await emitEvent(tx, decisionEvent("case.decision_overridden", row, result, now));
    const updated = await findCaseAnyTenant(tx, caseId);
    return caseRecord(ctx.cases.parts, tx, updated ?? row);
  });
}

/**
 * Closes a case for good: whatever it still waits on stops waiting, and no step runs again.
 * `auditActor` as for `overrideDecision`.
 */
export async function closeCase(
  ctx: AppContext,
  caseId: string,
  input: { actor: string },
  auditActor: string,
): Promise<CaseRecordView> {
  return ctx.db.transaction(async (tx) => {
    const row = await findCaseAnyTenant(tx, caseId, true);
    if (!row) throw notFound("case");
    if (isTerminal(row.status as CaseStatus))
      throw new AppError("conflict", `the case is already ${row.status}`);
    for (const closed of ctx.cases.onClosed) await closed(tx, row.tenant_id, row.id);
    await updateCase(tx, row.tenant_id, row.id, {
      status: "closed",
      current_node_id: null,
      closed_at: new Date(),
      closed_by: `analyst:${input.actor}`,
    });
    await insertAudit(tx, { tenantId: row.tenant_id, actor: auditActor }, "case.close", `case:${row.id}`, {
      before: { status: row.status },
      after: { status: "closed" },
    });
    const updated = await findCaseAnyTenant(tx, caseId);
    return caseRecord(ctx.cases.parts, tx, updated ?? row);
  });
}

/** `GET /admin/cases`: across tenants or for one, newest first, keyset-paged. */
export async function listCasesAsOperator(
  ctx: AppContext,
  query: CaseListQuery & { tenantId?: string; dryRun?: boolean },
) {
  const { tenantId, dryRun, ...rest } = query;
  const { filters, limit, after } = parseListQuery(rest);
  const rows = await listCasesForOperator(ctx.db.root, tenantId, { ...filters, dryRun }, limit + 1, after);
  return pageOf(rows, limit, (row) => {
    const { caseId, ...summary } = caseSummary(row);
    return { caseId, tenantId: row.tenant_id, ...summary };
  });
}

/** `GET /admin/cases/{caseId}`: the case record with its tenant and trace. */
export async function getCaseAsOperator(ctx: AppContext, caseId: string): Promise<AdminCaseRecordView> {
  const row = await findCaseAnyTenant(ctx.db.root, caseId);
  if (!row) throw notFound("case");
  return adminCaseRecord(ctx.cases.parts, ctx.db.root, row);
}
