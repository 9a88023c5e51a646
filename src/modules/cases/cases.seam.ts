import type { RawBuilder } from "kysely";
import type { Static } from "typebox";
import type { FeatureModule } from "../../platform/app-types.js";
import type { Executor, Tx } from "../../platform/db/index.js";
import type { InformationRequestSchema } from "../case-model/index.js";
import type { CaseTag, TraceEntry } from "./cases.schemas.js";
import { StartHandoff } from "./start-handoff.js";

// The cases module's part of the feature seam. A case record shows what other modules keep of
// the case (its tags, its information requests, its trace), and closing a case ends what they
// were doing for it (the engine's open waits). Those modules sit above cases and import it; cases
// reaches them only through what their features hand in here, as node types are handed in.

/** What other features add to a case record, each part kept by one of them. */
export interface CaseRecordParts {
  tags(db: Executor, tenantId: string, caseId: string): Promise<Static<typeof CaseTag>[]>;
  informationRequests(
    db: Executor,
    tenantId: string,
    caseId: string,
  ): Promise<Static<typeof InformationRequestSchema>[]>;
  trace(db: Executor, tenantId: string, caseId: string): Promise<Static<typeof TraceEntry>[]>;
}

/** A case as the statement that accepts it sees it, for what other features write with it. */
export interface AcceptedCase {
  id: string;
  tenantId: string;
  type: string;
  subject: Record<string, unknown>;
  externalCustomerId: string | null;
  dryRun: boolean;
}

/**
 * What a feature writes in the statement that accepts cases: common table expressions
 * (`name AS (…), …`, names starting with the feature's), which may read `kase (id, case_time, created_at)`,
 * the cases the statement inserted (a submission that met its idempotency key is not there).
 * Undefined when it has nothing to write for these cases.
 */
export type CaseAcceptHook = (cases: readonly AcceptedCase[]) => RawBuilder<unknown> | undefined;

/**
 * What a feature adds to the steps of a case's trace: what happened at a step after it ran (a
 * provider's vendor calls made by actions, the verdicts on its hits). Given the trace as the
 * features before it left it; answers it with its additions.
 */
export type TraceNotes = (
  db: Executor,
  tenantId: string,
  caseId: string,
  trace: Static<typeof TraceEntry>[],
) => Promise<Static<typeof TraceEntry>[]>;

/** Run in the transaction that closes a case, before the case is written closed. */
export type CaseClosedHook = (tx: Tx, tenantId: string, caseId: string) => Promise<void>;

/** What the cases module gets from the other features of the process. */
export interface CaseSeam {
  readonly parts: CaseRecordParts;
  readonly onClosed: readonly CaseClosedHook[];
  readonly onAccept: readonly CaseAcceptHook[];
  /** New cases handed from this process's API to its own starter, when one runs. */
  readonly starts: StartHandoff;
}

declare module "../../platform/app-types.js" {
  interface FeatureModule {
    /** The parts of a case record this feature keeps. */
    readonly caseRecord?: Partial<CaseRecordParts>;
    /** What this feature adds to the steps of a case's trace (kept by another feature). */
    readonly traceNotes?: TraceNotes;
    /** What this feature does when a case is closed, in the closing transaction. */
    readonly onCaseClosed?: CaseClosedHook;
    /** What this feature writes with each accepted case, in the statement that accepts it. */
    readonly onCaseAccepted?: CaseAcceptHook;
  }
}

declare module "../../platform/context.js" {
  interface AppContext {
    /** The case record's parts and the closing hooks of the features in this process. */
    readonly cases: CaseSeam;
  }
}

/** The seam of a list of features: each part of a case record from exactly one of them. */
export function caseSeamOf(features: readonly FeatureModule[]): CaseSeam {
  const parts: Partial<CaseRecordParts> = {};
  for (const feature of features) {
    for (const [name, load] of Object.entries(feature.caseRecord ?? {})) {
      if (name in parts) throw new Error(`two features keep the case record's ${name}`);
      Object.assign(parts, { [name]: load });
    }
  }
  for (const name of ["tags", "informationRequests", "trace"] as const) {
    if (!parts[name]) throw new Error(`no feature keeps the case record's ${name}`);
  }
  const notes = features.flatMap((f) => (f.traceNotes ? [f.traceNotes] : []));
  const steps = (parts as CaseRecordParts).trace;
  const trace: CaseRecordParts["trace"] = async (db, tenantId, caseId) => {
    let entries = await steps(db, tenantId, caseId);
    for (const note of notes) entries = await note(db, tenantId, caseId, entries);
    return entries;
  };
  return {
    parts: { ...(parts as CaseRecordParts), trace },
    onClosed: features.flatMap((f) => (f.onCaseClosed ? [f.onCaseClosed] : [])),
    onAccept: features.flatMap((f) => (f.onCaseAccepted ? [f.onCaseAccepted] : [])),
    starts: new StartHandoff(),
  };
}
