import { type Compilable, CompiledQuery } from "kysely";
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
  const params = new Params();
  const columns: string[] = [];
  const asked: Array<{ a: number; i: number }> = [];
  asks.forEach(({ kase, figures }, a) => {
    figures.forEach((figure, i) => {
      const part = figureQuery(db, params, kase, figure);
      if (typeof part !== "string") {
        (values[a] as Array<number | null>)[i] = part.value;
        return;
      }
      columns.push(`(${part}) AS c${a}f${i}`);
      asked.push({ a, i });
    });
  });
  if (asked.length === 0) return values;
  const { rows } = await db.executeQuery<Record<string, string | number | null>>(
    CompiledQuery.raw(`SELECT ${columns.join(", ")}`, params.values),
  );
  const row = rows[0] ?? {};
  for (const { a, i } of asked) {
    const raw = row[`c${a}f${i}`] ?? null;
    const fn = (asks[a] as (typeof asks)[number]).figures[i]?.function;
    (values[a] as Array<number | null>)[i] = raw === null ? (fn === "sum" ? 0 : null) : Number(raw);
  }
  return values;
}

/**
 * A statement's parameters as it is written: `add` gives a value's placeholder. The figures'
 * statement is written as text, not built with Kysely: building and compiling a batch's
 * subqueries was a tenth of a busy service's time on the history benchmark.
 */
class Params {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** Another module's subquery (a Kysely builder), its placeholders renumbered into this statement. */
  embed(query: Compilable): string {
    const { sql: text, parameters } = query.compile();
    const offset = this.values.length;
    this.values.push(...parameters);
    return text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  }
}

/** The figure's scalar subquery, or its value where no case can count (no key, no currency). */
function figureQuery(
  db: Executor,
  params: Params,
  kase: HistoryCase,
  figure: Figure,
): { value: number | null } | string {
  const empty =
    figure.function === "count" || figure.function === "countDistinct" || figure.function === "sum";
  const ids = entityKeysOf(kase.subject, kase.externalCustomerId)
    .filter((k) => k.type === figure.by)
    .map((k) => entityId(kase.tenantId, k.type, k.value));
  const amountOf = AMOUNT_FUNCTIONS.has(figure.function);
  const { currency } = transactionAmount(kase.subject);
  if (ids.length === 0 || (amountOf && currency === null)) return { value: empty ? 0 : null };

  const window = windowOf(db, params, kase, figure, ids, amountOf ? currency : null);
  if (figure.function === "countDistinct") return distinctQuery(params, window, figure);
  // With several entities of type `by` a case may be linked through more than one: once each.
  const distinct = ids.length === 1 ? "" : "DISTINCT ON (l.case_id) ";
  return `SELECT ${AGGREGATE_SQL[figure.function]} FROM (SELECT ${distinct}l.case_id, l.amount FROM case_entities l WHERE ${window}) c`;
}

/**
 * The conditions on the links of the figure's cases (`l`): those of this case's `by` entities
 * in the window, accepted before this case, other than it, that pass the figure's filters (and,
 * for an amount, carry one in this case's currency).
 */
function windowOf(
  db: Executor,
  params: Params,
  kase: HistoryCase,
  figure: Figure,
  ids: readonly string[],
  currency: string | null,
): string {
  const conditions = [
    `l.entity_id IN (${ids.map((id) => params.add(id)).join(", ")})`,
    `l.case_time > ${params.add(new Date(kase.time.getTime() - figure.windowMs))}`,
    `l.case_time <= ${params.add(kase.time)}`,
    `l.accepted_at < ${params.add(kase.createdAt)}`,
    `l.case_id <> ${params.add(kase.id)}`,
  ];
  if (figure.caseType) conditions.push(`l.case_type = ${params.add(figure.caseType)}`);
  if (currency !== null) conditions.push(`l.currency = ${params.add(currency)}`, "l.amount IS NOT NULL");
  if (figure.decision)
    conditions.push(`l.case_id IN (${params.embed(casesDecided(db, kase.tenantId, figure.decision))})`);
  if (figure.tag)
    conditions.push(`l.case_id IN (${params.embed(casesTagged(db, kase.tenantId, figure.tag))})`);
  return conditions.join(" AND ");
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
function distinctQuery(params: Params, window: string, figure: Figure): string {
  const type = params.add(figure.distinct as string);
  const own = figure.by === figure.distinct ? ` || entity_peer(l.entity_id, ${type}::text)` : "";
  // Few links have no peers; the partial index case_entities_many_keys holds just those.
  return `
    SELECT count(DISTINCT p.peer)
    FROM (SELECT unnest(l.peers${own}) AS peer FROM case_entities l WHERE ${window} AND l.peers IS NOT NULL
          UNION ALL
          SELECT entity_peer(o.entity_id, o.entity_type) AS peer
          FROM case_entities l INNER JOIN case_entities o ON o.case_id = l.case_id
          WHERE ${window} AND l.peers IS NULL) p
    WHERE p.peer BETWEEN entity_peer(${params.add(PEER_LOW)}::uuid, ${type}::text)
      AND entity_peer(${params.add(PEER_HIGH)}::uuid, ${type}::text)`;
}
