import { type Compilable, CompiledQuery, sql } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import { casesDecided } from "../cases/index.js";
import { casesTagged } from "../tags/index.js";
import { entityId, entityKeysOf, transactionAmount } from "./keys.js";
import { inWeeks, weeksBetween } from "./weeks.js";

// History (contract section 7, "History: the aggregate node"): figures over the tenant's other
// cases linked to this case's entities, each answered from the (week, entity_id, case_time) index
// of `case_entities`, one descent for each week the window overlaps, which carries the case facts
// a figure reads and the case's other entities (decision 0021).

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

/** The uuids whose `entity_peer` of a type bound that type's peers (migration 0020). */
const PEER_LOW = "00000000-0000-8000-8000-000000000000";
const PEER_HIGH = "ffffffff-ffff-8fff-bfff-ffffffffffff";

/**
 * The bounds of the peers of the type `distinctType` (an SQL expression), as the columns
 * `peer_low` and `peer_high` of a row a statement computes once, not for each peer it compares.
 */
export const peerBounds = (distinctType: string) =>
  `entity_peer('${PEER_LOW}'::uuid, ${distinctType}) AS peer_low,
   entity_peer('${PEER_HIGH}'::uuid, ${distinctType}) AS peer_high`;

const AMOUNT_FUNCTIONS = new Set<AggregateFunction>(["sum", "avg", "min", "max"]);

/** How each function reads the cases' rows (`c.amount` is the case's amount). */
const AGGREGATE_SQL: Record<Exclude<AggregateFunction, "countDistinct">, string> = {
  count: "count(*)",
  // Exact in decimal, over the amounts as `numeric` holds them, so that a kept window can take an
  // amount out of its sum again (decision 0021, "Sums kept as their windows slide").
  sum: "sum(c.amount::numeric)",
  avg: "sum(c.amount::numeric)::float8 / nullif(count(c.amount), 0)",
  min: "min(c.amount)",
  max: "max(c.amount)",
};

/**
 * The figures' values in one statement. A figure's value: `0` for count, countDistinct and sum
 * over nothing, `null` for avg, min and max over nothing. Cases are those linked to any of this
 * case's entities of type `by` (each counted once), whose time lies in the window ending at this
 * case's own time, accepted before this case, other than it; amounts only of cases in this case's
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

/** One figure to compute: its case's values, which its shape's subquery reads as `q.…`. */
interface Asked {
  a: number;
  i: number;
  shape: number;
  ids: string;
  from: Date;
  to: Date;
  acceptedBefore: Date;
  caseId: string;
  tenantId: string;
  currency: string | null;
  caseType: string | null;
  decision: string | null;
  tag: string | null;
  distinct: string | null;
}

/**
 * The figures of several cases, all in one statement. Each figure is one row of arrays given as
 * parameters (its case's keys, window and filters), and each kind of figure one subquery that
 * reads them: the statement's text depends on the kinds of figures asked for, not on how many
 * cases ask, so a connection prepares it once and plans it once (decision 0021). A plan made
 * once fits every key: each subquery reads one index range of its row's entities, whatever
 * their history.
 */
export async function computeFiguresOfCases(
  db: Executor,
  asks: ReadonlyArray<{ kase: HistoryCase; figures: readonly Figure[] }>,
  casesRead?: CasesRead,
): Promise<Array<Array<number | null>>> {
  const values = asks.map(() => [] as Array<number | null>);
  const shapes = new Map<string, { index: number; shape: Shape }>();
  const asked: Asked[] = [];
  asks.forEach(({ kase, figures }, a) => {
    const facts = factsOf(kase);
    figures.forEach((figure, i) => {
      const row = askedOf(kase, facts, figure, a, i);
      if ("value" in row) {
        (values[a] as Array<number | null>)[i] = row.value;
        return;
      }
      const shape = shapeOf(figure, row.ids.includes(","), row.currency !== null);
      const key = JSON.stringify(shape);
      let known = shapes.get(key);
      if (!known) {
        known = { index: shapes.size, shape };
        shapes.set(key, known);
      }
      row.shape = known.index;
      asked.push(row);
    });
  });
  if (asked.length === 0) return values;
  const column = <K extends keyof Asked>(k: K) => asked.map((row) => row[k]);
  const subqueries = [...shapes.values()].map(
    ({ index, shape }) => `WHEN ${index} THEN (${subqueryOf(db, shape)})`,
  );
  const { rows } = await db.executeQuery<{ n: number; v: Array<string | null> | null }>(
    CompiledQuery.raw(
      // The bounds of the distinct type's peers and the window's weeks are columns of q (OFFSET 0
      // keeps them there), so a subquery computes them once, not for each link it compares.
      `SELECT q.n, CASE q.shape ${subqueries.join(" ")} END AS v
       FROM (SELECT u.*, ${peerBounds("u.distinct_type")}, ${weeksBetween("u.time_from", "u.time_to")} AS weeks
             FROM unnest($1::int[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[],
                         $6::timestamptz[], $7::uuid[], $8::uuid[], $9::text[], $10::text[],
                         $11::text[], $12::text[], $13::text[])
               AS u(n, shape, ids, time_from, time_to, accepted_before, case_id, tenant_id,
                    currency, case_type, decision, tag, distinct_type)
             OFFSET 0) q`,
      [
        asked.map((_, n) => n),
        column("shape"),
        column("ids"),
        column("from"),
        column("to"),
        column("acceptedBefore"),
        column("caseId"),
        column("tenantId"),
        column("currency"),
        column("caseType"),
        column("decision"),
        column("tag"),
        column("distinct"),
      ],
    ),
  );
  for (const { n, v } of rows) {
    const { a, i } = asked[n] as Asked;
    const fn = (asks[a] as (typeof asks)[number]).figures[i]?.function;
    const [value, read] = v ?? [null, null];
    (values[a] as Array<number | null>)[i] = value == null ? (fn === "sum" ? 0 : null) : Number(value);
    if (casesRead && read != null) {
      const reads = casesRead[a] ?? [];
      reads[i] = Number(read);
      casesRead[a] = reads;
    }
  }
  return values;
}

/**
 * How many cases each figure of a statement read, by case and figure as its values are, where it
 * says: the functions of cases and amounts, not a distinct count (whose value is its own
 * measure). A key is known as long from these (`LongHistories`).
 */
export type CasesRead = Array<Array<number | undefined>>;

/** The cases' entity ids already computed: a batch's figures ask for them along several paths. */
const idsOfCases = new WeakMap<object, ReadonlyMap<string, readonly string[]>>();

/** The ids of the case's entities, by type (each a hash of its key), computed once per case. */
export function entityIdsByType(
  kase: Omit<HistoryCase, "id" | "time" | "createdAt">,
): ReadonlyMap<string, readonly string[]> {
  const known = idsOfCases.get(kase);
  if (known) return known;
  const byType = new Map<string, Set<string>>();
  for (const k of entityKeysOf(kase.subject, kase.externalCustomerId)) {
    const set = byType.get(k.type) ?? new Set<string>();
    set.add(entityId(kase.tenantId, k.type, k.value));
    byType.set(k.type, set);
  }
  const ids = new Map([...byType].map(([type, set]) => [type, [...set]]));
  idsOfCases.set(kase, ids);
  return ids;
}

/** The cases a figure of this case reads: those of `(from, to]`, accepted before it, other than it. */
export function windowOf(kase: HistoryCase, figure: Pick<Figure, "windowMs">) {
  return {
    from: new Date(kase.time.getTime() - figure.windowMs),
    to: kase.time,
    acceptedBefore: kase.createdAt,
    caseId: kase.id,
    tenantId: kase.tenantId,
  };
}

/** What every figure of a case reads of it: its entities' ids by type (as text), its currency. */
function factsOf(kase: HistoryCase): { ids: Map<string, string>; currency: string | null } {
  const ids = new Map([...entityIdsByType(kase)].map(([type, list]) => [type, list.join(",")]));
  return { ids, currency: transactionAmount(kase.subject).currency };
}

/**
 * Figure `i` of case `a`'s row of parameters (its shape still to be set), or its value where no
 * case can count (no key, no currency). One object literal (decision 0038).
 */
function askedOf(
  kase: HistoryCase,
  facts: ReturnType<typeof factsOf>,
  figure: Figure,
  a: number,
  i: number,
): { value: number | null } | Asked {
  const empty =
    figure.function === "count" || figure.function === "countDistinct" || figure.function === "sum";
  const ids = facts.ids.get(figure.by);
  const amountOf = AMOUNT_FUNCTIONS.has(figure.function);
  const { currency } = facts;
  if (ids === undefined || (amountOf && currency === null)) return { value: empty ? 0 : null };
  const window = windowOf(kase, figure);
  return {
    a,
    i,
    shape: -1,
    ids,
    from: window.from,
    to: window.to,
    acceptedBefore: window.acceptedBefore,
    caseId: window.caseId,
    tenantId: window.tenantId,
    currency: amountOf ? currency : null,
    caseType: figure.caseType ?? null,
    decision: figure.decision ?? null,
    tag: figure.tag ?? null,
    distinct: figure.function === "countDistinct" ? (figure.distinct ?? null) : null,
  };
}

/**
 * What a figure's subquery depends on besides its row's values: the function, whether the case
 * has several entities of the `by` type, and which filters apply.
 */
interface Shape {
  fn: AggregateFunction;
  several: boolean;
  currency: boolean;
  caseType: boolean;
  decision: boolean;
  tag: boolean;
  /** A countDistinct of the `by` type itself. */
  own: boolean;
}

function shapeOf(figure: Figure, several: boolean, currency: boolean): Shape {
  return {
    fn: figure.function,
    several,
    currency,
    caseType: figure.caseType !== undefined,
    decision: figure.decision !== undefined,
    tag: figure.tag !== undefined,
    own: figure.function === "countDistinct" && figure.by === figure.distinct,
  };
}

/**
 * The scalar subquery of one shape of figure, over its row `q`: an array of its value and of the
 * number of cases it read (NULL for a distinct count).
 */
function subqueryOf(db: Executor, { fn, several, currency, caseType, decision, tag, own }: Shape): string {
  const conditions = [
    inWeeks("l", "q.weeks"),
    several ? "l.entity_id = ANY(string_to_array(q.ids, ',')::uuid[])" : "l.entity_id = q.ids::uuid",
    "l.case_time > q.time_from",
    "l.case_time <= q.time_to",
    "l.accepted_at < q.accepted_before",
    "l.case_id <> q.case_id",
  ];
  if (caseType) conditions.push("l.case_type = q.case_type");
  if (currency) conditions.push("l.currency = q.currency", "l.amount IS NOT NULL");
  if (decision)
    conditions.push(
      `l.case_id IN (${inline(casesDecided(db, sql.ref<string>("q.tenant_id"), sql.ref<string>("q.decision")))})`,
    );
  if (tag)
    conditions.push(
      `l.case_id IN (${inline(casesTagged(db, sql.ref<string>("q.tenant_id"), sql.ref<string>("q.tag")))})`,
    );
  const window = conditions.join(" AND ");
  if (fn === "countDistinct") return distinctQuery(window, own);
  // With several entities of type `by` a case may be linked through more than one: once each.
  const distinct = several ? "DISTINCT ON (l.case_id) " : "";
  // The value and the number of cases it read.
  return `SELECT ARRAY[(${AGGREGATE_SQL[fn]})::numeric, count(*)::numeric] FROM (SELECT ${distinct}l.case_id, l.amount FROM case_entities l WHERE ${window}) c`;
}

/** Another module's subquery (a Kysely builder that reads only `q`'s columns), as text. */
function inline(query: Compilable): string {
  const { sql: text, parameters } = query.compile();
  if (parameters.length > 0) throw new Error("a figure's filter must read its values from q");
  return text;
}

/**
 * A countDistinct figure: the entities of type `distinct` on the window's cases, read from the
 * `by` entities' own index range, whose links carry each case's other entities (`peers`) — the
 * type's peers are one range of uuids. A case linked through several `by` entities gives its
 * peers once each (counted distinct all the same). When `distinct` is the `by` type (`own`), the
 * `by` entity itself is one of the case's entities of that type, and counts too. A case with more
 * keys than a link carries peers of (`peers` NULL) has its links read by primary key.
 */
function distinctQuery(window: string, own: boolean): string {
  const self = own ? " || entity_peer(l.entity_id, q.distinct_type)" : "";
  // Few links have no peers; the partial index case_entities_many_keys holds just those.
  return `
    SELECT ARRAY[count(DISTINCT p.peer)::numeric, NULL::numeric]
    FROM (SELECT unnest(l.peers${self}) AS peer FROM case_entities l WHERE ${window} AND l.peers IS NOT NULL
          UNION ALL
          SELECT entity_peer(o.entity_id, o.entity_type) AS peer
          FROM case_entities l INNER JOIN case_entities o ON o.case_id = l.case_id
          WHERE ${window} AND l.peers IS NULL) p
    WHERE p.peer BETWEEN q.peer_low AND q.peer_high`;
}
