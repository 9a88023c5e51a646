import { type Expression, expressionBuilder, type SqlBool, sql } from "kysely";

/** What a keyset page needs of a select query, whatever its tables. */
interface Pageable<Q> {
  where(expression: Expression<SqlBool>): Q;
  orderBy(expression: Expression<unknown>, direction: "asc" | "desc"): Q;
  limit(limit: number): Q;
}

/**
 * One page of `query` ordered by `[time, id]` in `direction`: the `limit` rows that come after
 * the keyset position `after` (the last row of the page before), or the first ones without it.
 */
export function keysetPage<Q extends Pageable<Q>>(
  query: Q,
  [time, id]: readonly [string, string],
  direction: "asc" | "desc",
  after: readonly [Date, string] | undefined,
  limit: number,
): Q {
  let q = query;
  if (after) {
    const [afterTime, afterId] = after;
    const past = direction === "asc" ? ">" : "<";
    const eb = expressionBuilder();
    q = q.where(
      eb.or([
        eb(sql.ref(time), past, afterTime),
        eb.and([eb(sql.ref(time), "=", afterTime), eb(sql.ref(id), past, afterId)]),
      ]),
    );
  }
  return q.orderBy(sql.ref(time), direction).orderBy(sql.ref(id), direction).limit(limit);
}
