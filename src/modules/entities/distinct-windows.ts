import { CompiledQuery } from "kysely";
import type { Executor } from "../../platform/db/index.js";
import { entityIdsByType, type Figure, type HistoryCase, PEER_HIGH, PEER_LOW } from "./history.js";

// A `countDistinct` over a key with a long history, answered from the key's links kept in this
// process instead of made distinct by the database at every case (decision 0021, "countDistinct
// of a long history"). The database still reads the window's index range, to count the links a
// figure would count and to send the ones this process has not seen; the count proves the kept
// links are all of them, or they are fetched again.

/**
 * A key whose figure counted at least this many cases has a long history: its distinct counts are
 * answered from a kept window. Below it, making the window's peers distinct costs the database
 * a few milliseconds at most, and the figure stays in the batch's one statement.
 */
export const LONG_HISTORY = 10_000;
/** How long a key stays known as long without a figure counting it again. */
const LONG_HISTORY_MS = 10 * 60_000;
/** The most keys a process knows as long; past it the oldest is forgotten. */
const LONG_HISTORY_KEYS = 10_000;

/**
 * The keys this process has seen figures count long histories for, learnt from the figures
 * themselves (a `count` or `countDistinct` of at least `LONG_HISTORY`), forgotten when one counts
 * less or after ten minutes. It decides only how a figure is computed, never what it is.
 */
export class LongHistories {
  readonly #until = new Map<string, number>();

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

  /** Learns from a case's figures which of its keys have long histories, and which no longer. */
  learn(kase: HistoryCase, figures: readonly Figure[], values: ReadonlyArray<number | null>): void {
    const longest = new Map<string, number>();
    figures.forEach((figure, i) => {
      if (figure.function !== "count" && figure.function !== "countDistinct") return;
      longest.set(figure.by, Math.max(longest.get(figure.by) ?? 0, values[i] ?? 0));
    });
    if (longest.size === 0) return;
    const long = [...longest.values()].some((n) => n >= LONG_HISTORY);
    // The common case, a short history of keys not known as long, costs no hashing.
    if (!long && this.#until.size === 0) return;
    const ids = entityIdsByType(kase);
    const now = Date.now();
    for (const [type, n] of longest) {
      for (const id of ids.get(type) ?? []) {
        this.#until.delete(id);
        if (n >= LONG_HISTORY) this.#until.set(id, now + LONG_HISTORY_MS);
      }
    }
    for (const oldest of this.#until.keys()) {
      if (this.#until.size <= LONG_HISTORY_KEYS) break;
      this.#until.delete(oldest);
    }
  }
}

/** One figure a window answers: the distinct entities of one type on one key's cases. */
export interface DistinctAsk {
  tenantId: string;
  entityId: string;
  distinctType: string;
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
}

/** The first index of `links` whose `field` is greater than `value` (they are sorted by it). */
function after(links: readonly Link[], field: "time" | "accepted", value: number): number {
  let lo = 0;
  let hi = links.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((links[mid] as Link)[field] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A key's links with their peers of one type, kept in memory: every link with a time after `lo`
 * that committed before the last read, and those since that the reads have brought. The counts
 * of the peers of the links in one window, `(a, b]`, are kept as the window slides: a case's
 * figure moves it by the cases between it and the last one, not by the whole window.
 */
class Kept {
  /** Links accepted at or after this (the database's clock) may not be here yet. */
  since = Number.NEGATIVE_INFINITY;
  used = 0;
  readonly byId = new Map<string, Link>();
  byTime: Link[] = [];
  byAccepted: Link[] = [];
  /** The window counted: `byTime[iLo, iHi)`, the links with a time in `(a, b]`. */
  a: number;
  b: number;
  iLo = 0;
  iHi = 0;
  readonly counts = new Map<string, number>();
  distinct = 0;

  constructor(public lo: number) {
    this.a = lo;
    this.b = lo;
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
    this.byTime.splice(after(this.byTime, "time", link.time), 0, link);
    this.byAccepted.splice(after(this.byAccepted, "accepted", link.accepted), 0, link);
    if (link.time <= this.a) {
      this.iLo++;
      this.iHi++;
    } else if (link.time <= this.b) {
      this.add(link);
      this.iHi++;
    }
    return true;
  }

  /**
   * Many links at once (a first read, or a long absence): added, sorted once, and the window
   * counted again from nothing, instead of one sorted insertion each.
   */
  load(links: readonly Link[]): number {
    let added = 0;
    for (const link of links) {
      if (this.byId.has(link.id) || link.time <= this.lo) continue;
      this.byId.set(link.id, link);
      this.byTime.push(link);
      this.byAccepted.push(link);
      added++;
    }
    this.byTime.sort((x, y) => x.time - y.time);
    this.byAccepted.sort((x, y) => x.accepted - y.accepted);
    this.counts.clear();
    this.distinct = 0;
    this.a = this.lo;
    this.b = this.lo;
    this.iLo = 0;
    this.iHi = 0;
    return added;
  }

  /** Moves the counted window to `(a, b]`. */
  slide(a: number, b: number): void {
    const lo = after(this.byTime, "time", a);
    const hi = after(this.byTime, "time", b);
    const change = (i: number) => {
      const was = i >= this.iLo && i < this.iHi;
      const is = i >= lo && i < hi;
      if (was && !is) this.remove(this.byTime[i] as Link);
      else if (is && !was) this.add(this.byTime[i] as Link);
    };
    const [s1, e1] = [Math.min(this.iLo, lo), Math.max(this.iLo, lo)];
    const [s2, e2] = [Math.min(this.iHi, hi), Math.max(this.iHi, hi)];
    if (e1 >= s2) {
      for (let i = s1; i < Math.max(e1, e2); i++) change(i);
    } else {
      for (let i = s1; i < e1; i++) change(i);
      for (let i = s2; i < e2; i++) change(i);
    }
    this.a = a;
    this.b = b;
    this.iLo = lo;
    this.iHi = hi;
  }

  /**
   * The links a figure counts in the window `(a, b]` and their distinct peers: those accepted
   * before `before` (a case counts only cases accepted before it), other than `caseId`.
   */
  count(a: number, b: number, before: number, caseId: string): { links: number; distinct: number } {
    this.slide(a, b);
    const inWindow = (l: Link) => l.time > a && l.time <= b;
    const out: Link[] = [];
    for (let i = this.byAccepted.length - 1; i >= 0; i--) {
      const link = this.byAccepted[i] as Link;
      if (link.accepted < before) break;
      if (inWindow(link)) out.push(link);
    }
    const own = this.byId.get(caseId);
    if (own && own.accepted < before && inWindow(own)) out.push(own);
    for (const link of out) this.remove(link);
    const counted = { links: this.iHi - this.iLo - out.length, distinct: this.distinct };
    for (const link of out) this.add(link);
    return counted;
  }

  /** Forgets the links at or before `lo`, which no window from `a` on reaches. */
  trim(lo: number): number {
    if (lo <= this.lo) return 0;
    this.slide(Math.max(this.a, lo), Math.max(this.b, lo));
    const k = after(this.byTime, "time", lo);
    const gone = this.byTime.splice(0, k);
    for (const link of gone) this.byId.delete(link.id);
    this.byAccepted = this.byAccepted.filter((l) => l.time > lo);
    this.iLo -= k;
    this.iHi -= k;
    this.lo = lo;
    return k;
  }
}

/** How far before the last read's own time a link's acceptance may lie and still be missing from it. */
const LATE_MS = 10_000;
/** How far before the latest window's start a key's links are kept. */
const BEHIND_MS = 86_400_000;
/** How long a key whose window could not be read within the budget is left to the statement. */
const PAUSE_MS = 60_000;
/** Past this many links a read brings, they are sorted in at once rather than one by one. */
const BULK = 256;
/** The most links kept in all; past it the windows used longest ago are dropped. */
const MAX_LINKS = 200_000;

interface Fetched {
  now: Date;
  n: string | number;
  wide: string | number;
  rows: Array<[string, number, number, string[] | null]> | string | null;
}

export class DistinctWindows {
  readonly #kept = new Map<string, Kept>();
  /** The figure of each key being answered: a key's figures are answered one after another. */
  readonly #turns = new Map<string, Promise<unknown>>();
  /** Keys whose first read passed the budget, until when the statement answers them. */
  readonly #paused = new Map<string, number>();
  #links = 0;

  /**
   * The figure's value, exactly as `computeFigures` gives it; undefined where a link of the window
   * has no peers (a case of many keys), which the statement answers instead.
   *
   * One key's figures take turns: each read then sees every link an earlier one brought (a
   * statement sees what committed before it began), so the links kept for the key are all
   * visible to the read of the figure being answered, and equal counts mean equal sets.
   */
  async count(db: Executor, ask: DistinctAsk, wholeDb: Executor = db): Promise<number | undefined> {
    const key = `${ask.entityId}:${ask.distinctType}`;
    const turn = (this.#turns.get(key) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.#countInTurn(db, wholeDb, key, ask));
    this.#turns.set(key, turn);
    try {
      return await turn;
    } finally {
      if (this.#turns.get(key) === turn) this.#turns.delete(key);
    }
  }

  async #countInTurn(
    db: Executor,
    wholeDb: Executor,
    key: string,
    ask: DistinctAsk,
  ): Promise<number | undefined> {
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
      if (kept) {
        const fetched = await this.#read(db, ask, kept);
        if (Number(fetched.wide) > 0) return undefined;
        this.#merge(kept, fetched);
        kept.used = Date.now();
        const counted = kept.count(from, to, before, ask.caseId);
        // Equal counts of a subset mean the same links: the value is exact.
        if (counted.links === Number(fetched.n)) {
          this.#trim(key, kept, from);
          return counted.distinct;
        }
        // A link accepted long before it committed was missed: read the key's window again, whole.
        this.#drop(key, kept);
      }
      // A first read, or a read again: every link of the key from a day before the window's
      // start, on a connection with a longer budget (tens of milliseconds for 33,000 links, once).
      const whole = new Kept(from - BEHIND_MS);
      const fetched = await this.#read(wholeDb, ask, whole);
      this.#drop(key, this.#kept.get(key));
      this.#kept.set(key, whole);
      this.#merge(whole, fetched);
      whole.used = Date.now();
      if (Number(fetched.wide) > 0) return undefined;
      const counted = whole.count(from, to, before, ask.caseId);
      if (counted.links !== Number(fetched.n)) return undefined;
      this.#trim(key, whole, from);
      return counted.distinct;
    } catch (err) {
      // Past the budget (a first read of a long window on a busy database): the statement answers
      // this key's figures for a minute, rather than a read cancelled again at every case.
      if ((err as { code?: string }).code !== "57014") throw err;
      this.#drop(key, this.#kept.get(key));
      this.#paused.set(key, Date.now() + PAUSE_MS);
      return undefined;
    }
  }

  async #read(db: Executor, ask: DistinctAsk, kept: Kept): Promise<Fetched> {
    const since = Number.isFinite(kept.since) ? new Date(kept.since) : null;
    const { rows } = await db.executeQuery<Fetched>(
      CompiledQuery.raw(
        // One range of the key's index: the links the figure counts, whether any has no peers, and
        // those accepted since the last read, each with its peers of the type.
        `SELECT now() AS now,
                count(*) FILTER (WHERE l.case_time > $2 AND l.case_time <= $3 AND l.accepted_at < $4
                                   AND l.case_id <> $5) AS n,
                count(*) FILTER (WHERE l.case_time > $2 AND l.case_time <= $3 AND l.peers IS NULL) AS wide,
                json_agg(json_build_array(l.case_id,
                                          extract(epoch FROM l.case_time) * 1000,
                                          extract(epoch FROM l.accepted_at) * 1000,
                                          (SELECT array_agg(p) FROM unnest(l.peers) p
                                           WHERE p BETWEEN entity_peer('${PEER_LOW}'::uuid, $8)
                                                       AND entity_peer('${PEER_HIGH}'::uuid, $8))))
                  FILTER (WHERE $7::timestamptz IS NULL OR l.accepted_at >= $7) AS rows
         FROM case_entities l
         WHERE l.entity_id = $1 AND l.case_time > $6`,
        [
          ask.entityId,
          ask.from,
          ask.to,
          ask.acceptedBefore,
          ask.caseId,
          new Date(kept.lo),
          since,
          ask.distinctType,
        ],
      ),
    );
    const row = rows[0];
    if (!row) throw new Error("the window's statement returned no row");
    return row;
  }

  #merge(kept: Kept, fetched: Fetched): void {
    const rows = (
      typeof fetched.rows === "string" ? JSON.parse(fetched.rows) : (fetched.rows ?? [])
    ) as Array<[string, number, number, string[] | null]>;
    const links = rows.map(([id, time, accepted, peers]) => ({
      id,
      time: Number(time),
      accepted: Number(accepted),
      peers: peers ?? [],
    }));
    if (links.length > BULK) this.#links += kept.load(links);
    else for (const link of links) if (kept.insert(link)) this.#links++;
    kept.since = Math.max(kept.since, new Date(fetched.now).getTime() - LATE_MS);
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
