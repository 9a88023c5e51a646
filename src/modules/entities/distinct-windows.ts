import { CompiledQuery } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import { historyWindowReads } from "../../platform/metrics.js";
import { ACCEPTED_LAG_SECONDS } from "../cases/index.js";
import { AmountTotal, asNumeric, throughNumeric } from "./amounts.js";
import {
  type AggregateFunction,
  entityIdsByType,
  type Figure,
  type HistoryCase,
  peerBounds,
} from "./history.js";
import { inWeeks, LATEST_CASE_TIME, weeksBetween } from "./weeks.js";

// A `countDistinct` over a key with a long history, answered from the key's links kept in this
// process instead of made distinct by the database at every case (decision 0021, "countDistinct
// of a long history"). After a first read of the key's links, each read brings only those accepted
// since the last one, and the transactions in progress when it began bound what it cannot see yet.

/**
 * A key whose figure counted at least this many cases has a long history: its distinct counts are
 * answered from a kept window. Below it, making the window's peers distinct costs the database
 * a few milliseconds at most, and the figure stays in the batch's one statement.
 */
export const LONG_HISTORY = 10_000;
/**
 * The same on the embedded database, where the statement's reads run in WebAssembly on the thread
 * that serves every request: a 30-day distinct count over 3,300 cases and a 7-day sum over 800
 * took it about 4 ms a case, against 0.3 to 0.9 ms for a batch of short histories.
 */
export const LONG_HISTORY_EMBEDDED = 1_000;
/** How long a key stays known as long without a figure counting it again. */
const LONG_HISTORY_MS = 10 * 60_000;
/** The most keys a process knows as long; past it the oldest is forgotten. */
const LONG_HISTORY_KEYS = 10_000;

/**
 * The keys this process has seen figures count long histories for, learnt from the figures
 * themselves (a `count` or `countDistinct` of at least `LONG_HISTORY`, `LONG_HISTORY_EMBEDDED` on
 * the embedded database, or a sum, average or bound whose statement read as many cases), forgotten
 * when one counts less or after ten minutes. It decides only how a figure is computed, never what
 * it is.
 */
export class LongHistories {
  readonly #until = new Map<string, number>();

  /** @param threshold the cases a figure counts from which its key's history is long. */
  constructor(readonly threshold: number = LONG_HISTORY) {}

  has(id: string): boolean {
    if (this.#until.size === 0) return false;
    const until = this.#until.get(id);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#until.delete(id);
    return false;
  }

  get size(): number {
    return this.#until.size;
  }

  /**
   * Learns from a case's figures which of its keys have long histories, and which no longer: each
   * figure the statement answered gives the number of cases in its window (a count's or distinct
   * count's value, the cases an amount's function read); one a kept window answered gives nothing
   * (undefined), and neither teaches nor unlearns its key.
   */
  learn(kase: HistoryCase, figures: readonly Figure[], sizes: ReadonlyArray<number | undefined>): void {
    const threshold = this.threshold;
    const longest = new Map<string, number>();
    figures.forEach((figure, i) => {
      const size = sizes[i];
      if (size === undefined) return;
      longest.set(figure.by, Math.max(longest.get(figure.by) ?? 0, size));
    });
    if (longest.size === 0) return;
    const long = [...longest.values()].some((n) => n >= threshold);
    // The common case, a short history of keys not known as long, costs no hashing.
    if (!long && this.#until.size === 0) return;
    const ids = entityIdsByType(kase);
    const now = Date.now();
    for (const [type, n] of longest) {
      for (const id of ids.get(type) ?? []) {
        this.#until.delete(id);
        if (n >= threshold) this.#until.set(id, now + LONG_HISTORY_MS);
      }
    }
    for (const oldest of this.#until.keys()) {
      if (this.#until.size <= LONG_HISTORY_KEYS) break;
      this.#until.delete(oldest);
    }
  }
}

/**
 * One figure a kept window answers over one key's cases: a distinct count of the entities of one
 * type, or a count or an amount's sum, average or bound (of the cases in `currency`), of cases of
 * `caseType` if given.
 */
export interface DistinctAsk {
  tenantId: string;
  entityId: string;
  fn: AggregateFunction;
  /** The type a `countDistinct` counts; null for the other functions. */
  distinctType: string | null;
  /** The case's currency, for the functions of an amount. */
  currency: string | null;
  caseType: string | null;
  /** The window: cases whose time lies in (from, to], accepted before `acceptedBefore`, other than `caseId`. */
  from: Date;
  to: Date;
  acceptedBefore: Date;
  caseId: string;
}

interface Link {
  id: string;
  time: number;
  accepted: number;
  peers: string[];
  /** A link without peers (a case of more keys than a link carries): the statement's to count. */
  wide: boolean;
  caseType: string;
  currency: string | null;
  amount: number | null;
  /** The amount as the statement's `amount::numeric` holds it, once a window's totals need it. */
  numeric?: { units: bigint; scale: number };
}

/** The order of a key's index range, read backwards: by time, then by case id. */
function byTimeThenId(x: Link, y: Link): number {
  return x.time - y.time || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
}

/** The first index of sorted `links` past every link `atOrBefore` holds for. */
function firstAfter(links: readonly Link[], atOrBefore: (link: Link) => boolean): number {
  let lo = 0;
  let hi = links.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (atOrBefore(links[mid] as Link)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index of `links` whose `field` is greater than `value` (they are sorted by it). */
function after(links: readonly Link[], field: "time" | "accepted", value: number): number {
  return firstAfter(links, (l) => l[field] <= value);
}

/** Where `link` goes in `links`, sorted by time and case id. */
function placeOf(links: readonly Link[], link: Link): number {
  return firstAfter(links, (l) => byTimeThenId(l, link) <= 0);
}

/** What a window does with a link that enters it (1) or leaves it (-1). */
type Change = (link: Link, sign: 1 | -1) => void;

/**
 * A window `(a, b]` over a key's links sorted by time: `byTime[iLo, iHi)`. It slides by the links
 * between where it was and where it goes, each given to `change` with 1 as it enters and -1 as it
 * leaves, never by the whole window.
 */
class Slide {
  iLo = 0;
  iHi = 0;

  constructor(
    public a: number,
    public b: number,
    readonly change: Change,
  ) {}

  /** Moves the window to `(a, b]` over `links`. */
  move(links: readonly Link[], a: number, b: number): void {
    const change = this.change;
    const lo = after(links, "time", a);
    const hi = after(links, "time", b);
    const step = (i: number) => {
      const was = i >= this.iLo && i < this.iHi;
      const is = i >= lo && i < hi;
      if (was && !is) change(links[i] as Link, -1);
      else if (is && !was) change(links[i] as Link, 1);
    };
    const [s1, e1] = [Math.min(this.iLo, lo), Math.max(this.iLo, lo)];
    const [s2, e2] = [Math.min(this.iHi, hi), Math.max(this.iHi, hi)];
    if (e1 >= s2) {
      for (let i = s1; i < Math.max(e1, e2); i++) step(i);
    } else {
      for (let i = s1; i < e1; i++) step(i);
      for (let i = s2; i < e2; i++) step(i);
    }
    this.a = a;
    this.b = b;
    this.iLo = lo;
    this.iHi = hi;
  }

  /** A link just put in its place in the sorted links: the window's indexes and, if in it, `change`. */
  inserted(link: Link): void {
    if (link.time <= this.a) {
      this.iLo++;
      this.iHi++;
    } else if (link.time <= this.b) {
      this.change(link, 1);
      this.iHi++;
    }
  }

  /** The first `k` links, at or before `lo`, are gone: first out of the window, then from the indexes. */
  trimmed(links: readonly Link[], lo: number, k: number): void {
    this.move(links, Math.max(this.a, lo), Math.max(this.b, lo));
    this.iLo -= k;
    this.iHi -= k;
  }
}

/** A link's amount as `numeric` holds it, worked out once, when a window's totals first need it. */
function numericOf(link: Link): { units: bigint; scale: number } {
  if (link.numeric === undefined) link.numeric = asNumeric(link.amount ?? 0);
  return link.numeric;
}

/**
 * The counts of a window's links by case type, and their amounts' totals by case type and
 * currency; `*` stands for every case type.
 */
class Totals {
  readonly counts = new Map<string, number>();
  readonly amounts = new Map<string, AmountTotal>();

  readonly change: Change = (link, sign) => {
    for (const type of [link.caseType, "*"]) {
      this.counts.set(type, (this.counts.get(type) ?? 0) + sign);
      if (link.amount === null || link.currency === null) continue;
      const key = `${type}\u0000${link.currency}`;
      let total = this.amounts.get(key);
      if (!total) {
        total = new AmountTotal();
        this.amounts.set(key, total);
      }
      total.add(numericOf(link), sign);
    }
  };
}

/**
 * A key's links with their peers of one type, kept in memory: every link with a time after `lo`
 * that the last read could see. The counts of the peers of the links in one window, and the
 * counts and amounts of the links of each window length asked, are kept as their windows slide:
 * a case's figure moves them by the cases between it and the last one, not by the whole window.
 */
class Kept {
  /** Links accepted at or after this (the database's clock) may not be here yet. */
  since: number;
  used = 0;
  readonly byId = new Map<string, Link>();
  byTime: Link[] = [];
  byAccepted: Link[] = [];
  /** The window whose peers are counted. */
  window: Slide;
  readonly counts = new Map<string, number>();
  distinct = 0;
  /** The windows of counts and amounts, by their length, with their totals. */
  readonly totals = new Map<number, { slide: Slide; totals: Totals }>();
  readonly #peers: Change = (link, sign) => {
    if (sign === 1) this.add(link);
    else this.remove(link);
  };

  /** Links with no peers kept: while there are none, no window holds one. */
  wide = 0;
  /** The longest window asked of it, whose start (less a day) bounds what it keeps. */
  reach = 0;
  /** The batch whose figures last read its links: that batch's other figures read nothing more. */
  readIn: object | undefined;

  constructor(
    public lo: number,
    since: number,
  ) {
    this.window = new Slide(lo, lo, this.#peers);
    this.since = since;
  }

  get size(): number {
    return this.byTime.length;
  }

  add(link: Link): void {
    for (const p of link.peers) {
      const n = this.counts.get(p) ?? 0;
      if (n === 0) this.distinct++;
      this.counts.set(p, n + 1);
    }
  }

  remove(link: Link): void {
    for (const p of link.peers) {
      const n = this.counts.get(p) ?? 0;
      if (n <= 1) {
        this.counts.delete(p);
        this.distinct--;
      } else this.counts.set(p, n - 1);
    }
  }

  insert(link: Link): boolean {
    if (this.byId.has(link.id) || link.time <= this.lo) return false;
    this.byId.set(link.id, link);
    if (link.wide) this.wide++;
    this.byTime.splice(placeOf(this.byTime, link), 0, link);
    this.byAccepted.splice(after(this.byAccepted, "accepted", link.accepted), 0, link);
    this.window.inserted(link);
    for (const { slide } of this.totals.values()) slide.inserted(link);
    return true;
  }

  /**
   * Many links at once (a first read, or a long absence): added, sorted once, and the windows
   * counted again from nothing, instead of one sorted insertion each.
   */
  load(links: readonly Link[]): number {
    let added = 0;
    for (const link of links) {
      if (this.byId.has(link.id) || link.time <= this.lo) continue;
      this.byId.set(link.id, link);
      if (link.wide) this.wide++;
      this.byTime.push(link);
      this.byAccepted.push(link);
      added++;
    }
    this.byTime.sort(byTimeThenId);
    this.byAccepted.sort((x, y) => x.accepted - y.accepted);
    this.counts.clear();
    this.distinct = 0;
    this.window = new Slide(this.lo, this.lo, this.#peers);
    this.totals.clear();
    return added;
  }

  /**
   * The links a figure over `(a, b]` does not count although they are in it: those accepted at or
   * after `before` (a case counts only cases accepted before it), and the case's own.
   */
  #excluded(a: number, b: number, before: number, caseId: string): Link[] {
    const inWindow = (l: Link) => l.time > a && l.time <= b;
    const out: Link[] = [];
    for (let i = this.byAccepted.length - 1; i >= 0; i--) {
      const link = this.byAccepted[i] as Link;
      if (link.accepted < before) break;
      if (inWindow(link)) out.push(link);
    }
    const own = this.byId.get(caseId);
    if (own && own.accepted < before && inWindow(own)) out.push(own);
    return out;
  }

  /**
   * The distinct peers of the links a figure counts in the window `(a, b]`: those accepted before
   * `before`, other than `caseId`. Undefined when one of them has no peers.
   */
  count(a: number, b: number, before: number, caseId: string): number | undefined {
    this.window.move(this.byTime, a, b);
    if (this.wide > 0) {
      for (let i = this.window.iLo; i < this.window.iHi; i++) {
        const link = this.byTime[i] as Link;
        if (link.wide && link.accepted < before && link.id !== caseId) return undefined;
      }
    }
    const out = this.#excluded(a, b, before, caseId);
    for (const link of out) this.remove(link);
    const distinct = this.distinct;
    for (const link of out) this.add(link);
    return distinct;
  }

  /**
   * A count, or a sum, average, least or greatest amount, over the links of `(a, b]` accepted
   * before `before`, other than `caseId`, of `caseType` and in `currency` where given, as the
   * statement computes it: a sum exact in decimal over the amounts as `numeric` holds them, an
   * average that sum as a double over the count, each rounded as the statement's cast to `numeric`
   * rounds a double. Counts, sums and averages come from totals kept as each window length's
   * window slides; the bounds from the window's links.
   */
  aggregate(
    fn: AggregateFunction,
    a: number,
    b: number,
    ask: { before: number; caseId: string; caseType: string | null; currency: string | null },
  ): number | null {
    const type = ask.caseType ?? "*";
    const counted = (link: Link) => ask.caseType === null || link.caseType === ask.caseType;
    const summed = (link: Link) => counted(link) && link.amount !== null && link.currency === ask.currency;
    if (fn === "min" || fn === "max") {
      let bound: number | null = null;
      for (let i = after(this.byTime, "time", b) - 1, lo = after(this.byTime, "time", a); i >= lo; i--) {
        const link = this.byTime[i] as Link;
        if (link.accepted >= ask.before || link.id === ask.caseId || !summed(link)) continue;
        const amount = link.amount as number;
        if (bound === null || (fn === "min" ? amount < bound : amount > bound)) bound = amount;
      }
      return bound === null ? null : throughNumeric(bound);
    }
    let kept = this.totals.get(b - a);
    if (!kept) {
      const totals = new Totals();
      kept = { slide: new Slide(this.lo, this.lo, totals.change), totals };
      this.totals.set(b - a, kept);
    }
    const { slide, totals } = kept;
    slide.move(this.byTime, a, b);
    const out = this.#excluded(a, b, ask.before, ask.caseId);
    if (fn === "count") return (totals.counts.get(type) ?? 0) - out.filter(counted).length;
    const total = totals.amounts.get(`${type}\u0000${ask.currency}`)?.copy() ?? new AmountTotal();
    for (const link of out) if (summed(link)) total.add(numericOf(link), -1);
    switch (fn) {
      case "sum":
        return total.n === 0 ? 0 : total.sum();
      case "avg":
        return total.n === 0 ? null : throughNumeric(total.sum() / total.n);
      default:
        throw new Error(`a kept window does not compute ${fn} this way`);
    }
  }

  /** Forgets the links at or before `lo`, which no window from `a` on reaches. */
  trim(lo: number): number {
    if (lo <= this.lo) return 0;
    const k = after(this.byTime, "time", lo);
    this.window.trimmed(this.byTime, lo, k);
    for (const { slide } of this.totals.values()) slide.trimmed(this.byTime, lo, k);
    const gone = this.byTime.splice(0, k);
    for (const link of gone) {
      this.byId.delete(link.id);
      if (link.wide) this.wide--;
    }
    this.byAccepted = this.byAccepted.filter((l) => l.time > lo);
    this.lo = lo;
    return k;
  }
}

/** Links whose case time lies more than this before their acceptance are read by acceptance (migrations 0029 and 0032). */
const LATE_CASE = "interval '10 seconds'";
/** How far before the latest window's start a key's links are kept. */
const BEHIND_MS = 86_400_000;
/** How long a key whose window could not be read within the budget is left to the statement. */
const PAUSE_MS = 60_000;
/** Past this many links a read brings, they are sorted in at once rather than one by one. */
const BULK = 256;
/** The most links kept in all; past it the windows used longest ago are dropped. */
const MAX_LINKS = 200_000;
/** How long a read of the transactions in progress is used for the reads that begin after it. */
const HORIZON_REUSE_MS = 50;

type LinkRow = [string, number, number, string[] | null, boolean, string, string | null, number | null];

/**
 * What every read of a key's links needs first: a time before which nothing it cannot see was
 * accepted. A link goes in with its case, in the transaction that inserts the case, and a case's
 * acceptance time is never more than `ACCEPTED_LAG_SECONDS` before that transaction's start (the
 * cases' insert raises it). So a read that begins after this statement sees every link accepted
 * before the oldest start of the transactions then in progress, less that lag: any link it cannot
 * see belongs to a transaction then in progress or begun since. Undefined when the service's role
 * cannot see another session's transaction (a session of another role, without
 * `pg_read_all_stats`): the reads then fall back to the statement.
 *
 * A database of one session (the embedded one, whose driver runs one transaction at a time) has no
 * transaction in progress but the reader's own: the oldest start is `now()`, the start of the
 * reader's transaction (or of the statement outside one), and `pg_stat_activity`, which cost the
 * embedded database 0.59 ms a read, is not asked.
 */
async function readHorizon(db: Executor, oneSession: boolean): Promise<number | undefined> {
  const { rows } = await db.executeQuery<{ oldest: Date | string; hidden: string | number }>(
    CompiledQuery.raw(
      oneSession
        ? "SELECT now() AS oldest, 0 AS hidden"
        : `SELECT least(clock_timestamp(), min(xact_start)) AS oldest,
                  count(*) FILTER (WHERE backend_type IS NULL) AS hidden
           FROM pg_stat_activity WHERE datname = current_database()`,
    ),
  );
  const row = rows[0];
  if (!row || Number(row.hidden) > 0) return undefined;
  // The lag, and the millisecond its raised times are truncated by.
  return new Date(row.oldest).getTime() - ACCEPTED_LAG_SECONDS * 1000 - 1;
}

/**
 * The columns of a link a kept window holds, as one JSON array per link, with its peers between
 * `k.peer_low` and `k.peer_high`: those of the type the window counts, none when it counts no type.
 * The bounds are columns of `k`, computed once a window (`peerBounds`), not for each peer of each
 * link compared: the read of what is new took a fifth less on the embedded database.
 */
const LINK_JSON = `json_build_array(l.case_id,
  extract(epoch FROM l.case_time) * 1000,
  extract(epoch FROM l.accepted_at) * 1000,
  (SELECT array_agg(p) FROM unnest(l.peers) p WHERE p BETWEEN k.peer_low AND k.peer_high),
  l.peers IS NULL, l.case_type, l.currency, l.amount)`;

/**
 * The links accepted since each window's last read, of every window asked at once: one row of
 * parameters a window (its key, what it keeps, its peers' type, its last read's horizon), and for
 * each, those of recent case times from the key's index range and the late ones (a case time well
 * before the acceptance) from the index of late links. Both are short: the key's links of the
 * ten seconds before the horizon and since.
 */
const READ_NEW = `SELECT (SELECT json_agg(${LINK_JSON})
        FROM (SELECT * FROM case_entities l
              WHERE ${inWeeks("l", "k.weeks")} AND l.entity_id = k.entity_id AND l.case_time > k.lo
                AND l.case_time > k.since - ${LATE_CASE} AND l.accepted_at >= k.since
              UNION ALL
              SELECT * FROM case_entities l
              WHERE l.entity_id = k.entity_id AND l.case_time > k.lo AND l.accepted_at >= k.since
                AND l.accepted_at - l.case_time > ${LATE_CASE}) l) AS rows
  FROM (SELECT u.*, ${peerBounds("u.distinct_type")},
               ${weeksBetween(`greatest(u.lo, u.since - ${LATE_CASE})`, LATEST_CASE_TIME)} AS weeks
        FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::timestamptz[]) WITH ORDINALITY
          AS u(entity_id, lo, distinct_type, since, n)
        OFFSET 0) k
  ORDER BY k.n`;

/** A kept window's key: a distinct count keeps its key's peers of its type; the other functions share one. */
function keyOf(ask: DistinctAsk): string {
  return `${ask.entityId}:${ask.distinctType ?? ""}`;
}

export class DistinctWindows {
  readonly #oneSession: boolean;
  readonly #kept = new Map<string, Kept>();
  /** The figure of each key being answered: a key's figures are answered one after another. */
  readonly #turns = new Map<string, Promise<unknown>>();
  /** Keys whose first read passed the budget, until when the statement answers them. */
  readonly #paused = new Map<string, number>();
  #links = 0;
  /** The latest horizon read, and when its statement ended (this process's clock). */
  #horizon: { at: number; value: Promise<number | undefined> } | undefined;

  /**
   * @param options.oneSession the database has one session, which runs one transaction at a time
   *   (the embedded database): no other transaction is ever in progress beside the reader's.
   */
  constructor({ oneSession = false }: { oneSession?: boolean } = {}) {
    this.#oneSession = oneSession;
  }

  /**
   * The figure's value, exactly as `computeFigures` gives it; undefined where a link of the window
   * has no peers (a case of many keys), or the transactions in progress cannot be seen, which the
   * statement answers instead.
   *
   * One key's figures take turns, so that each read begins after the last one ended.
   */
  async count(
    db: Executor,
    ask: DistinctAsk,
    wholeDb: Executor = db,
    batch?: object,
  ): Promise<number | null | undefined> {
    const key = keyOf(ask);
    const turn = (this.#turns.get(key) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.#countInTurn(db, wholeDb, key, ask, batch));
    this.#turns.set(key, turn);
    try {
      return await turn;
    } finally {
      if (this.#turns.get(key) === turn) this.#turns.delete(key);
    }
  }

  /**
   * A horizon from a statement that ended before this call: one read recently serves every read
   * that begins after it (an older horizon only makes a read bring more links again).
   */
  async #currentHorizon(db: Executor): Promise<number | undefined> {
    const known = this.#horizon;
    if (known && Date.now() - known.at < HORIZON_REUSE_MS) return known.value;
    const value = readHorizon(db, this.#oneSession);
    const entry = { at: Number.POSITIVE_INFINITY, value };
    this.#horizon = entry;
    try {
      await value;
    } catch (err) {
      if (this.#horizon === entry) this.#horizon = undefined;
      throw err;
    }
    entry.at = Date.now();
    return value;
  }

  async #countInTurn(
    db: Executor,
    wholeDb: Executor,
    key: string,
    ask: DistinctAsk,
    batch: object | undefined,
  ): Promise<number | null | undefined> {
    const paused = this.#paused.get(key);
    if (paused !== undefined) {
      if (paused > Date.now()) return undefined;
      this.#paused.delete(key);
    }
    const from = ask.from.getTime();
    const to = ask.to.getTime();
    const before = ask.acceptedBefore.getTime();
    try {
      let kept = this.#kept.get(key);
      // A window reaching before what is kept (a case back in time) starts again from it.
      if (kept && from < kept.lo) {
        this.#drop(key, kept);
        kept = undefined;
      }
      // A key read for another figure of the batch is not read again: the batch's cases were all
      // accepted before that read, which saw what one statement for all their figures would have.
      if (!kept || batch === undefined || kept.readIn !== batch) {
        const horizon = await this.#currentHorizon(db);
        if (horizon === undefined) return undefined;
        if (!kept) {
          // A first read: every link of the key from a day before the window's start, on a
          // connection with a longer budget (tens of milliseconds for 33,000 links, once).
          const whole = new Kept(from - BEHIND_MS, horizon);
          const rows = await this.#readWhole(wholeDb, ask, whole);
          historyWindowReads.inc({ read: "whole" });
          this.#drop(key, this.#kept.get(key));
          this.#kept.set(key, whole);
          this.#merge(whole, rows);
          kept = whole;
        } else {
          const [rows] = await this.#readNew(db, [{ ask, kept }]);
          historyWindowReads.inc({ read: "new" });
          this.#merge(kept, rows ?? []);
          kept.since = horizon;
        }
        kept.readIn = batch;
      }
      kept.used = Date.now();
      kept.reach = Math.max(kept.reach, to - from);
      const value =
        ask.fn === "countDistinct"
          ? kept.count(from, to, before, ask.caseId)
          : kept.aggregate(ask.fn, from, to, {
              before,
              caseId: ask.caseId,
              caseType: ask.caseType,
              currency: ask.currency,
            });
      this.#trim(key, kept, to - kept.reach);
      return value;
    } catch (err) {
      // Past the budget (a first read of a long window on a busy database): the statement answers
      // this key's figures for a minute, rather than a read cancelled again at every case.
      if ((err as { code?: string }).code !== "57014") throw err;
      this.#drop(key, this.#kept.get(key));
      this.#paused.set(key, Date.now() + PAUSE_MS);
      return undefined;
    }
  }

  /** Every link of the key with a case time after what the window keeps. */
  async #readWhole(db: Executor, ask: DistinctAsk, kept: Kept): Promise<LinkRow[]> {
    return this.#rows(
      db,
      `SELECT json_agg(${LINK_JSON}) AS rows
       FROM case_entities l, (SELECT ${peerBounds("$3::text")} OFFSET 0) k
       WHERE ${inWeeks("l", weeksBetween("$2::timestamptz", LATEST_CASE_TIME))}
         AND l.entity_id = $1 AND l.case_time > $2`,
      [ask.entityId, new Date(kept.lo), ask.distinctType],
    );
  }

  /**
   * What is new in each kept window `asks` will use, for all of them in one statement: the links
   * accepted since each one's last read. A batch reads this before its figures, which then read
   * nothing more (`count` with the same `batch`). Windows not kept yet, or asked further back
   * than they keep, are left to `count`'s first read.
   */
  async readNew(db: Executor, asks: readonly DistinctAsk[], batch: object): Promise<void> {
    const wanted = new Map<string, DistinctAsk>();
    for (const ask of asks) {
      const key = keyOf(ask);
      if (!wanted.has(key) && this.#fresh(key, ask, batch)) wanted.set(key, ask);
    }
    if (wanted.size === 0) return;
    // The read takes every key's turn: it begins after each key's last read ended.
    const keys = [...wanted.keys()];
    const waits = keys.map((key) => (this.#turns.get(key) ?? Promise.resolve()).catch(() => undefined));
    const turn = Promise.all(waits).then(async () => {
      const due = [...wanted].filter(([key, ask]) => this.#fresh(key, ask, batch));
      if (due.length === 0) return;
      const horizon = await this.#currentHorizon(db);
      if (horizon === undefined) return;
      const kept = due.map(([key]) => this.#kept.get(key) as Kept);
      const rows = await this.#readNew(
        db,
        due.map(([, ask], i) => ({ ask, kept: kept[i] as Kept })),
      );
      historyWindowReads.inc({ read: "new" });
      due.forEach(([key], i) => {
        const k = kept[i] as Kept;
        // Dropped meanwhile to make room for another key's window: nothing to bring up to date.
        if (this.#kept.get(key) !== k) return;
        this.#merge(k, rows[i] ?? []);
        k.since = horizon;
        k.readIn = batch;
      });
    });
    for (const key of keys) this.#turns.set(key, turn);
    try {
      await turn;
    } finally {
      for (const key of keys) if (this.#turns.get(key) === turn) this.#turns.delete(key);
    }
  }

  /** Whether `ask`'s window is kept, reaches back far enough for it, and was not read in `batch`. */
  #fresh(key: string, ask: DistinctAsk, batch: object): boolean {
    const kept = this.#kept.get(key);
    const paused = this.#paused.get(key);
    return (
      kept !== undefined &&
      kept.readIn !== batch &&
      ask.from.getTime() >= kept.lo &&
      (paused === undefined || paused <= Date.now())
    );
  }

  /** The links accepted since the last read's horizon of each window, by window. */
  async #readNew(
    db: Executor,
    windows: ReadonlyArray<{ ask: DistinctAsk; kept: Kept }>,
  ): Promise<LinkRow[][]> {
    const { rows } = await db.executeQuery<{ rows: LinkRow[] | string | null }>(
      CompiledQuery.raw(READ_NEW, [
        windows.map((w) => w.ask.entityId),
        windows.map((w) => new Date(w.kept.lo)),
        windows.map((w) => w.ask.distinctType),
        windows.map((w) => new Date(w.kept.since)),
      ]),
    );
    return rows.map(({ rows: value }) =>
      typeof value === "string" ? (JSON.parse(value) as LinkRow[]) : (value ?? []),
    );
  }

  async #rows(db: Executor, text: string, parameters: unknown[]): Promise<LinkRow[]> {
    const { rows } = await db.executeQuery<{ rows: LinkRow[] | string | null }>(
      CompiledQuery.raw(text, parameters),
    );
    const value = rows[0]?.rows ?? null;
    return (typeof value === "string" ? JSON.parse(value) : (value ?? [])) as LinkRow[];
  }

  #merge(kept: Kept, rows: readonly LinkRow[]): void {
    const links = rows.map(([id, time, accepted, peers, wide, caseType, currency, amount]) => ({
      id,
      time: Number(time),
      accepted: Number(accepted),
      peers: peers ?? [],
      wide,
      caseType,
      currency,
      amount: amount === null ? null : Number(amount),
    }));
    if (links.length > BULK) this.#links += kept.load(links);
    else for (const link of links) if (kept.insert(link)) this.#links++;
  }

  /** Forgets links that no later window of this key reaches, and windows past the bound. */
  #trim(key: string, kept: Kept, from: number): void {
    // Keep a day behind the latest window's start, for cases a little back in time.
    const lo = from - BEHIND_MS;
    if (lo > kept.lo + 3_600_000) this.#links -= kept.trim(lo);
    if (this.#links <= MAX_LINKS) return;
    const byAge = [...this.#kept].filter(([k]) => k !== key).sort((a, b) => a[1].used - b[1].used);
    for (const [k, w] of byAge) {
      if (this.#links <= MAX_LINKS) break;
      this.#drop(k, w);
    }
  }

  #drop(key: string, kept: Kept | undefined): void {
    if (!kept || this.#kept.get(key) !== kept) return;
    this.#kept.delete(key);
    this.#links -= kept.size;
  }
}
