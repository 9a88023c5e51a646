import { type RawBuilder, sql } from "kysely";

// The links' index is by week first (migration 0033, decision 0021 "Links by week"): a new case's
// links go into the current week's part of the index, not onto pages spread over the whole of a
// long history. A read by entity names the weeks it reads, each one descent of the index: a
// window the weeks it overlaps, a read of an entity's whole history every week from the oldest
// link's to the newest a case may have.

/** A Monday: weeks run from Monday 00:00 UTC. Migration 0033's index names the same expression. */
const ORIGIN = "'2000-01-03 00:00:00+00'::timestamptz";

/** The start of the week of `time` (an SQL expression), as the links' index computes it. */
export const weekOf = (time: string) => `date_bin('7 days'::interval, ${time}, ${ORIGIN})`;

/** The condition that link `l`'s week is one of `weeks` (an SQL array): one descent each. */
export const inWeeks = (l: string, weeks: string) => `${weekOf(`${l}.case_time`)} = ANY(${weeks})`;

/** The weeks that case times from `from` to `to` (SQL expressions) fall in, as an array. */
export const weeksBetween = (from: string, to: string) =>
  `ARRAY(SELECT generate_series(${weekOf(from)}, ${to}, '7 days'::interval))`;

/**
 * The latest case time a link can have: a case's time is at most `CDS_MAX_EVENT_SKEW_SECONDS`
 * (at most a day) after its acceptance, and two days leave room for the clocks of several hosts.
 */
export const LATEST_CASE_TIME = "(now() + '2 days'::interval)";

/** The week of the oldest link of all, from the index's first entry: where a whole history starts. */
export const OLDEST_WEEK = `(SELECT min(${weekOf("case_time")}) FROM case_entities)`;

/** Every week a link can be in, oldest first. */
export const ALL_WEEKS = weeksBetween(OLDEST_WEEK, LATEST_CASE_TIME);

/**
 * Every week from that of `newest` (else the latest a link can be in) back to the oldest link's,
 * newest first, as an array: what a read of a history newest first walks through.
 */
export function weeksBack(newest: Date | undefined): RawBuilder<Date[]> {
  const from = newest === undefined ? sql.raw(LATEST_CASE_TIME) : sql`${newest}::timestamptz`;
  return sql`ARRAY(SELECT generate_series(date_bin('7 days'::interval, ${from}, ${sql.raw(ORIGIN)}),
                                          ${sql.raw(OLDEST_WEEK)}, '-7 days'::interval))`;
}
