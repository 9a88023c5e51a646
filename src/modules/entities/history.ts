import { type RawBuilder, sql } from "kysely";
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

/** How each function reads the cases' rows (`c.amount` is the case's amount). */
const AGGREGATE_SQL: Record<Exclude<AggregateFunction, "countDistinct">, string> = {
  count: "count(*)",
  sum: "sum(c.amount)",
  avg: "avg(c.amount)",
  min: "min(c.amount)",
  max: "max(c.amount)",
};

/**
 * The figures' values in one statement, one scalar subquery a figure (a node's figures cost one
 * round trip, not one each). A figure's value: `0` for count, countDistinct and sum over
 * nothing, `null` for avg, min and max over nothing. Cases are those linked to any of this case's
 * entities of type `by` (each counted once), whose time lies in the window ending at this case's
 * own time, accepted before this case, other than it; amounts only of cases in this case's
 * currency.
 */
export async function computeFigures(
  db: Executor,
  kase: HistoryCase,
  figures: readonly Figure[],
): Promise<Array<number | null>> {
  const parts = figures.map((figure) => figureQuery(db, kase, figure));
  const asked = parts.flatMap((part, i) => ("query" in part ? [{ i, query: part.query }] : []));
  const values = parts.map((part) => ("value" in part ? part.value : null));
  if (asked.length === 0) return values;
  const { rows } = await sql<Record<string, string | number | null>>`
    SELECT ${sql.join(asked.map(({ i, query }) => sql`(${query}) AS ${sql.ref(`f${i}`)}`))}`.execute(db);
  const row = rows[0] ?? {};
  for (const { i } of asked) {
    const raw = row[`f${i}`] ?? null;
    const fn = (figures[i] as Figure).function;
    values[i] = raw === null ? (fn === "sum" ? 0 : null) : Number(raw);
  }
  return values;
}

/** The figure's scalar subquery, or its value where no case can count (no key, no currency). */
function figureQuery(
  db: Executor,
  kase: HistoryCase,
  figure: Figure,
): { value: number | null } | { query: RawBuilder<unknown> } {
  const empty =
    figure.function === "count" || figure.function === "countDistinct" || figure.function === "sum";
  const ids = entityKeysOf(kase.subject, kase.externalCustomerId)
    .filter((k) => k.type === figure.by)
    .map((k) => entityId(kase.tenantId, k.type, k.value));
  const amountOf = AMOUNT_FUNCTIONS.has(figure.function);
  const { currency } = transactionAmount(kase.subject);
  if (ids.length === 0 || (amountOf && currency === null)) return { value: empty ? 0 : null };

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
    return {
      query: sql`
        SELECT count(DISTINCT o.entity_id)
        FROM (${cases.select("l.case_id")}) c
        CROSS JOIN LATERAL (
          SELECT o.entity_id FROM case_entities o
          WHERE o.case_id = c.case_id AND o.entity_type = ${figure.distinct as string}
          OFFSET 0
        ) o`,
    };
  }
  // With several entities of type `by` a case may be linked through more than one: once each.
  const rows =
    ids.length === 1
      ? cases.select(["l.case_id", "l.amount"])
      : cases.select(["l.case_id", "l.amount"]).distinctOn("l.case_id");
  return { query: sql`SELECT ${sql.raw(AGGREGATE_SQL[figure.function])} FROM (${rows}) c` };
}
