import { sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import { casesDecided } from "../cases/index.js";
import { casesTagged } from "../tags/index.js";
import { entityId, entityKeysOf, transactionAmount } from "./keys.js";

// History (contract section 7, "History: the aggregate node"): figures over the tenant's other
// cases linked to this case's entities, each answered from the (entity_id, case_time) index of
// `case_entities`, which carries the case facts a figure reads (decision 0021).

/** The functions a figure may compute. */
export const AGGREGATE_FUNCTIONS = ["count", "countDistinct", "sum", "avg", "min", "max"] as const;
export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];

/** One figure of an aggregate node, as its definition states it (the window in milliseconds). */
export interface Figure {
  function: AggregateFunction;
  by: string;
  windowMs: number;
  distinct?: string;
  caseType?: string;
  decision?: string;
  tag?: string;
}

/** The case a figure is computed for. */
export interface HistoryCase {
  id: string;
  tenantId: string;
  subject: Record<string, unknown>;
  externalCustomerId: string | null;
  time: Date;
  createdAt: Date;
}

const AMOUNT_FUNCTIONS = new Set<AggregateFunction>(["sum", "avg", "min", "max"]);

/**
 * A figure's value: `0` for count, countDistinct and sum over nothing, `null` for avg, min and
 * max over nothing. Cases are those linked to any of this case's entities of type `by` (each
 * counted once), whose time lies in the window ending at this case's own time, accepted before
 * this case, other than it; amounts only of cases in this case's currency.
 */
export async function computeFigure(db: Executor, kase: HistoryCase, figure: Figure): Promise<number | null> {
  const empty =
    figure.function === "count" || figure.function === "countDistinct" || figure.function === "sum";
  const ids = entityKeysOf(kase.subject, kase.externalCustomerId)
    .filter((k) => k.type === figure.by)
    .map((k) => entityId(kase.tenantId, k.type, k.value));
  const amountOf = AMOUNT_FUNCTIONS.has(figure.function);
  const { currency } = transactionAmount(kase.subject);
  if (ids.length === 0 || (amountOf && currency === null)) return empty ? 0 : null;

  let cases = db
    .selectFrom("case_entities as l")
    .where("l.entity_id", "in", ids)
    .where("l.case_time", ">", new Date(kase.time.getTime() - figure.windowMs))
    .where("l.case_time", "<=", kase.time)
    .where("l.accepted_at", "<", kase.createdAt)
    .where("l.case_id", "<>", kase.id);
  if (figure.caseType) cases = cases.where("l.case_type", "=", figure.caseType);
  if (amountOf) cases = cases.where("l.currency", "=", currency).where("l.amount", "is not", null);
  if (figure.decision)
    cases = cases.where("l.case_id", "in", casesDecided(db, kase.tenantId, figure.decision));
  if (figure.tag) cases = cases.where("l.case_id", "in", casesTagged(db, kase.tenantId, figure.tag));

  if (figure.function === "countDistinct") {
    // The entities of type `distinct` on those cases: each case's own links, probed by the links'
    // primary key (`OFFSET 0` keeps the planner from turning 30,000 probes of a hot key into a
    // scan of the whole table).
    const { rows } = await sql<{ n: string }>`
      SELECT count(DISTINCT o.entity_id) AS n
      FROM (${cases.select("l.case_id")}) c
      CROSS JOIN LATERAL (
        SELECT o.entity_id FROM case_entities o
        WHERE o.case_id = c.case_id AND o.entity_type = ${figure.distinct as string}
        OFFSET 0
      ) o`.execute(db);
    return Number(rows[0]?.n ?? 0);
  }
  // With several entities of type `by` a case may be linked through more than one: once each.
  const rows =
    ids.length === 1
      ? cases.select(["l.case_id", "l.amount"])
      : cases.select(["l.case_id", "l.amount"]).distinctOn("l.case_id");
  const result = await db
    .selectFrom(rows.as("c"))
    .select([
      sql<string>`count(*)`.as("count"),
      sql<number | null>`sum(c.amount)`.as("sum"),
      sql<number | null>`avg(c.amount)`.as("avg"),
      sql<number | null>`min(c.amount)`.as("min"),
      sql<number | null>`max(c.amount)`.as("max"),
    ])
    .executeTakeFirstOrThrow();
  switch (figure.function) {
    case "count":
      return Number(result.count);
    case "sum":
      return result.sum === null ? 0 : Number(result.sum);
    default: {
      const value = result[figure.function];
      return value === null ? null : Number(value);
    }
  }
}
