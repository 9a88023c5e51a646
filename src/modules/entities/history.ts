import { type RawBuilder, sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import { casesDecided } from "../cases/index.js";
import { casesTagged } from "../tags/index.js";
import { entityId, entityKeysOf, transactionAmount } from "./keys.js";

// History (contract section 7, "History: the aggregate node"): figures over the tenant's other
// cases linked to this case's entities, each answered from the (entity_id, case_time) index of
// `case_entities`, which carries the case facts a figure reads and the case's other entities
// (decision 0021).

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
  const [values] = await computeFiguresOfCases(db, [{ kase, figures }]);
  return values ?? [];
}

/** The figures of several cases, all in one statement (at most 1,600 figures in all). */
export async function computeFiguresOfCases(
  db: Executor,
  asks: ReadonlyArray<{ kase: HistoryCase; figures: readonly Figure[] }>,
): Promise<Array<Array<number | null>>> {
  const values = asks.map(() => [] as Array<number | null>);
  const asked: Array<{ a: number; i: number; query: RawBuilder<unknown> }> = [];
  asks.forEach(({ kase, figures }, a) => {
    figures.forEach((figure, i) => {
      const part = figureQuery(db, kase, figure);
      if ("value" in part) (values[a] as Array<number | null>)[i] = part.value;
      else asked.push({ a, i, query: part.query });
    });
  });
  if (asked.length === 0) return values;
  const column = (a: number, i: number) => `c${a}f${i}`;
  const { rows } = await sql<Record<string, string | number | null>>`
    SELECT ${sql.join(asked.map(({ a, i, query }) => sql`(${query}) AS ${sql.ref(column(a, i))}`))}`.execute(
    db,
  );
  const row = rows[0] ?? {};
  for (const { a, i } of asked) {
    const raw = row[column(a, i)] ?? null;
    const fn = (asks[a] as (typeof asks)[number]).figures[i]?.function;
    (values[a] as Array<number | null>)[i] = raw === null ? (fn === "sum" ? 0 : null) : Number(raw);
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

  const cases = windowOf(db, kase, figure, ids, amountOf ? currency : null);
  if (figure.function === "countDistinct") return { query: distinctQuery(cases, figure) };
  // With several entities of type `by` a case may be linked through more than one: once each.
  const rows =
    ids.length === 1
      ? cases.select(["l.case_id", "l.amount"])
      : cases.select(["l.case_id", "l.amount"]).distinctOn("l.case_id");
  return { query: sql`SELECT ${sql.raw(AGGREGATE_SQL[figure.function])} FROM (${rows}) c` };
}

/**
 * The links of the figure's cases: those of this case's `by` entities in the window, accepted
 * before this case, other than it, that pass the figure's filters (and, for an amount, carry one
 * in this case's currency).
 */
function windowOf(
  db: Executor,
  kase: HistoryCase,
  figure: Figure,
  ids: readonly string[],
  currency: string | null,
) {
  let cases = db
    .selectFrom("case_entities as l")
    .where("l.entity_id", "in", ids)
    .where("l.case_time", ">", new Date(kase.time.getTime() - figure.windowMs))
    .where("l.case_time", "<=", kase.time)
    .where("l.accepted_at", "<", kase.createdAt)
    .where("l.case_id", "<>", kase.id);
  if (figure.caseType) cases = cases.where("l.case_type", "=", figure.caseType);
  if (currency !== null) cases = cases.where("l.currency", "=", currency).where("l.amount", "is not", null);
  if (figure.decision)
    cases = cases.where("l.case_id", "in", casesDecided(db, kase.tenantId, figure.decision));
  if (figure.tag) cases = cases.where("l.case_id", "in", casesTagged(db, kase.tenantId, figure.tag));
  return cases;
}

/** The uuids whose `entity_peer` of a type bound that type's peers (migration 0020). */
const PEER_LOW = "00000000-0000-8000-8000-000000000000";
const PEER_HIGH = "ffffffff-ffff-8fff-bfff-ffffffffffff";

/**
 * A countDistinct figure: the entities of type `distinct` on the window's cases, read from the
 * `by` entities' own index range, whose links carry each case's other entities (`peers`) — the
 * type's peers are one range of uuids. A case linked through several `by` entities gives its
 * peers once each (counted distinct all the same). When `distinct` is the `by` type, the `by`
 * entity itself is one of the case's entities of that type, and counts too. A case with more keys
 * than a link carries peers of (`peers` NULL) has its links read by primary key.
 */
function distinctQuery(cases: ReturnType<typeof windowOf>, figure: Figure): RawBuilder<unknown> {
  const type = figure.distinct as string;
  const own = figure.by === type ? sql` || entity_peer(l.entity_id, ${type}::text)` : sql``;
  const carried = cases
    .where("l.peers", "is not", null)
    .select(sql<string>`unnest(l.peers${own})`.as("peer"));
  // Few links have no peers; the partial index case_entities_many_keys holds just those.
  const read = cases
    .where("l.peers", "is", null)
    .innerJoin("case_entities as o", "o.case_id", "l.case_id")
    .select(sql<string>`entity_peer(o.entity_id, o.entity_type)`.as("peer"));
  return sql`
    SELECT count(DISTINCT p.peer)
    FROM (${carried} UNION ALL ${read}) p
    WHERE p.peer BETWEEN entity_peer(${PEER_LOW}::uuid, ${type}::text)
      AND entity_peer(${PEER_HIGH}::uuid, ${type}::text)`;
}
