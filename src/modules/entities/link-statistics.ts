import { sql } from "kysely";
import type { BackgroundWorker } from "../../platform/app-types.js";
import type { Db } from "../../platform/db/index.js";
import type { Log } from "../../platform/logger.js";

// The links' statistics taken as their table grows (decision 0021, "The links' statistics, taken
// at each doubling"). A reader by
// entity names the weeks it reads (`weeks.ts`), and PostgreSQL costs a week list it cannot see
// as ten descents of the index. While the table is a few pages, a scan of the whole table or of
// its primary key is cheaper than that, and a connection plans each statement once (decision
// 0030): without statistics taken since, a connection that planned the figures' statement then
// went on scanning the whole table at every figure as it grew, a few times PostgreSQL's work a
// case on the history benchmark. `ANALYZE` makes every connection plan again. Autovacuum does the
// same where it runs; this does it where it does not, at each doubling, a dozen times up to a
// million links.

/** How often a worker looks at the size of the links' table. */
const LOOK_EVERY_MS = 5_000;

/** The size, in pages, at which the first statistics are taken: about 250 links. */
const FIRST_PAGES = 8;

export interface LinkStatisticsOptions {
  readonly everyMs: number;
  readonly firstPages: number;
}

/** The pages of `case_entities` now, and those its last `ANALYZE` counted (`relpages`). */
export async function linkTableSize(db: Db): Promise<{ pages: number; counted: number }> {
  const { rows } = await sql<{ pages: number; counted: number }>`
    SELECT (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS pages,
           c.relpages AS counted
    FROM pg_class c WHERE c.oid = 'case_entities'::regclass`.execute(db.root);
  return rows[0] ?? { pages: 0, counted: 0 };
}

/** Takes the statistics of `case_entities` each time it has doubled since they were last taken. */
export class LinkStatistics implements BackgroundWorker {
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<unknown> | undefined;

  constructor(
    private readonly db: Db,
    private readonly log: Log,
    private readonly options: LinkStatisticsOptions = { everyMs: LOOK_EVERY_MS, firstPages: FIRST_PAGES },
  ) {}

  async start(): Promise<void> {
    this.#timer = setInterval(() => {
      this.#looking ??= this.look()
        .catch((err: unknown) => this.log.warn({ err }, "taking the links' statistics failed"))
        .finally(() => {
          this.#looking = undefined;
        });
    }, this.options.everyMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#looking;
  }

  /**
   * Takes the statistics if the table is at least `firstPages` and twice the size it had when
   * they were last taken (`relpages`, which `ANALYZE` sets); true when it took them. Another
   * process taking them at that moment is not waited for (`SKIP_LOCKED`).
   */
  async look(): Promise<boolean> {
    const size = await linkTableSize(this.db);
    if (size.pages < Math.max(this.options.firstPages, 2 * size.counted)) return false;
    await sql`ANALYZE (SKIP_LOCKED) case_entities`.execute(this.db.root);
    this.log.info({ pages: size.pages, previously: size.counted }, "links' statistics taken");
    return true;
  }
}
