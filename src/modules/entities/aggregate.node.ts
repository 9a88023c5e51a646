import { batcherPer } from "../../platform/batcher.js";
import { type Db, type Executor, type Tx, withinBudget } from "../../platform/db/index.js";
import { CASE_TYPES, DECISION_VALUES } from "../case-model/index.js";
import {
  describeEnd,
  fieldReferences,
  isJsonObject,
  type NodeCase,
  type NodeOutcome,
  type NodeReplay,
  type NodeType,
  schemaRef,
} from "../workflows/index.js";
import {
  type DistinctAsk,
  DistinctWindows,
  LONG_HISTORY,
  LONG_HISTORY_EMBEDDED,
  LongHistories,
} from "./distinct-windows.js";
import {
  AGGREGATE_FUNCTIONS,
  type AggregateFunction,
  type CasesRead,
  computeFigures,
  computeFiguresOfCases,
  entityIdsByType,
  type Figure,
  windowOf,
} from "./history.js";
import { ENTITY_TYPES, transactionAmount } from "./keys.js";

// The `aggregate` node (contract section 7, "History"): figures over the tenant's past cases
// linked to this case's entities, read by later nodes as `nodes.<id>.<name>`.

/** At most this many figures per node. */
export const MAX_FIGURES = 20;
const FIGURE_NAME = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";
/** The shortest and longest windows, in milliseconds. */
const MINUTE = 60_000;
const WINDOW_MIN = MINUTE;
const WINDOW_MAX = 400 * 24 * 60 * MINUTE;

/**
 * An ISO 8601 duration of weeks, days, hours, minutes and seconds (`PT1H`, `P7D`, `P1DT12H`) in
 * milliseconds; undefined for anything else (months and years have no fixed length).
 */
export function parseWindow(window: string): number | undefined {
  const m = /^P(?:(\d{1,4})W)?(?:(\d{1,5})D)?(?:T(?:(\d{1,6})H)?(?:(\d{1,7})M)?(?:(\d{1,9})S)?)?$/.exec(
    window,
  );
  if (!m || window === "P" || window.endsWith("T")) return undefined;
  const [w, d, h, min, s] = m.slice(1).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
  ];
  return ((((w * 7 + d) * 24 + h) * 60 + min) * 60 + s) * 1000;
}

interface FigureDefinition {
  function: AggregateFunction;
  by: string;
  window: string;
  field?: "amount";
  distinct?: string;
  caseType?: string;
  decision?: string;
  tag?: string;
}

export interface AggregateNode {
  id: string;
  type: "aggregate";
  next: string;
  figures: Array<{ name: string; definition: FigureDefinition; figure: Figure }>;
}

const AMOUNT_FUNCTIONS: readonly string[] = ["sum", "avg", "min", "max"];
const COUNTED_FUNCTIONS: readonly string[] = ["count", "countDistinct"];

/**
 * How long one aggregate node's figures may take on PostgreSQL (decision 0021): PostgreSQL cancels
 * a read past it. A batch's figures are read in its transaction under this budget; a batch whose
 * reads pass it reads them again on connections of their own, beside the transaction, each case
 * with the whole budget, and a case whose figures alone pass it fails with a clear error instead
 * of holding a connection and a case lock. (The embedded database has one connection: no bound.)
 */
export const HISTORY_BUDGET_MS = 500;

/**
 * How long the first read of a long history's kept window may take (every link of the key since a
 * day before the window: 33,000 of them in tens of milliseconds on a quiet database, once per key
 * and process). Past it the statement answers that key's figures for a minute.
 */
const WINDOW_READ_BUDGET_MS = 5_000;

const cancelled = (err: unknown) => (err as { code?: string }).code === "57014";

interface FiguresAsked {
  db: Db;
  kase: NodeCase;
  figures: readonly Figure[];
}

/** What a process knows of one database's histories: its long keys, and their kept windows. */
interface Histories {
  long: LongHistories;
  windows: DistinctWindows;
}

/**
 * One `Histories` per database: a kept window holds that database's links, and its reads' horizon
 * is that database's transactions. A process has one database; the tests have many.
 */
const historiesByDb = new WeakMap<Db, Histories>();

function historiesOf(db: Db): Histories {
  let histories = historiesByDb.get(db);
  if (!histories) {
    const embedded = db.kind === "pglite";
    histories = {
      // A long history is one whose statement costs more than its kept window would.
      long: new LongHistories(embedded ? LONG_HISTORY_EMBEDDED : LONG_HISTORY),
      windows: new DistinctWindows({ oneSession: embedded }),
    };
    historiesByDb.set(db, histories);
  }
  return histories;
}

/**
 * The figures of a batch that no kept window answers, in one statement: on PostgreSQL on a
 * bounded connection beside the transaction, on the embedded database in it. Null for a case
 * whose figures PostgreSQL cancelled on the budget: figures that together passed it are computed
 * again each on their own, so that only those that alone pass it fail.
 */
async function statementFigures(
  tx: Tx,
  bounded: Executor | undefined,
  asks: FiguresAsked[],
  casesRead: CasesRead,
): Promise<Array<Array<number | null> | null>> {
  if (!bounded) return computeFiguresOfCases(tx, asks, casesRead);
  try {
    return await computeFiguresOfCases(bounded, asks, casesRead);
  } catch (err) {
    if (!cancelled(err)) throw err;
    if (asks.length === 1) return [null];
    return Promise.all(
      asks.map(({ kase, figures }) =>
        computeFigures(bounded, kase, figures).catch((e: unknown) => {
          if (cancelled(e)) return null;
          throw e;
        }),
      ),
    );
  }
}

/**
 * A figure a kept window answers: over one key known as long, with no filter on the current
 * decision or a tag (those change after a case is accepted); a distinct count of another type
 * than the key's, with no filter at all.
 */
function windowAskOf(long: LongHistories, kase: NodeCase, figure: Figure): DistinctAsk | undefined {
  if (figure.decision || figure.tag) return undefined;
  const distinct = figure.function === "countDistinct";
  if (distinct && (!figure.distinct || figure.distinct === figure.by || figure.caseType)) return undefined;
  const by = entityIdsByType(kase).get(figure.by);
  const entityId = by?.length === 1 ? by[0] : undefined;
  if (!entityId || !long.has(entityId)) return undefined;
  let currency: string | null = null;
  if (AMOUNT_FUNCTIONS.includes(figure.function)) {
    currency = transactionAmount(kase.subject).currency;
    // No currency, no amount to add: the statement's way gives the empty value at once.
    if (currency === null) return undefined;
  }
  // The spread last: a spread's copy takes no property after it (decision 0038).
  return {
    entityId,
    fn: figure.function,
    distinctType: distinct ? (figure.distinct ?? null) : null,
    currency,
    caseType: figure.caseType ?? null,
    ...windowOf(kase, figure),
  };
}

/** A figure of a batch that a kept window answers: the case's index, the figure's, and the ask. */
interface Windowed {
  a: number;
  i: number;
  ask: DistinctAsk;
}

/**
 * What a batch's reads bring: the statement's figures by case (and how many cases each read, by
 * case and index among the statement's figures), and the kept windows' by `Windowed`.
 */
interface Reads {
  fromStatement: Array<Array<number | null> | null>;
  casesRead: CasesRead;
  fromWindows: Array<number | null | "cancelled">;
}

/** One figure from its key's kept window, or from the statement when a link has no peers. */
async function windowFigure(
  windows: DistinctWindows,
  reader: Executor,
  wholeReader: Executor,
  asks: FiguresAsked[],
  { a, i, ask }: Windowed,
): Promise<number | null> {
  // The batch's asks stand for the batch: one read of a key's links serves all its figures.
  const value = await windows.count(reader, ask, wholeReader, asks);
  if (value !== undefined) return value;
  // A link of the window has no peers (a case of many keys): the statement's way.
  const { kase, figures } = asks[a] as FiguresAsked;
  const [computed] = await computeFigures(reader, kase, [figures[i] as Figure]);
  return computed ?? null;
}

/**
 * A batch's reads in its own transaction, one after another, each under the budget (PostgreSQL,
 * `withinBudget`). A read past the budget throws, and the savepoint is rolled back.
 */
async function readInTransaction(
  tx: Tx,
  windows: DistinctWindows,
  wholeReader: Executor,
  asks: FiguresAsked[],
  statementAsks: FiguresAsked[],
  windowed: Windowed[],
): Promise<Reads> {
  return withinBudget(tx, HISTORY_BUDGET_MS, async () => {
    const casesRead: CasesRead = [];
    const fromStatement = await computeFiguresOfCases(tx, statementAsks, casesRead);
    // What is new in every kept window the batch asks, in one read; its figures then read nothing.
    await windows.readNew(
      tx,
      windowed.map((w) => w.ask),
      asks,
    );
    const fromWindows: Array<number | null> = [];
    for (const w of windowed) fromWindows.push(await windowFigure(windows, tx, wholeReader, asks, w));
    return { fromStatement, casesRead, fromWindows };
  });
}

/**
 * A batch's reads side by side on the bounded connections (PostgreSQL, when the reads in the
 * transaction passed the budget), or in the transaction (the embedded database, which has one
 * connection and no bound). A figure past the budget fails only its own case.
 */
async function readBeside(
  tx: Tx,
  windows: DistinctWindows,
  bounded: Executor | undefined,
  wholeReader: Executor,
  asks: FiguresAsked[],
  statementAsks: FiguresAsked[],
  windowed: Windowed[],
): Promise<Reads> {
  const reader = bounded ?? tx;
  const casesRead: CasesRead = [];
  const fromKeptWindows = async () => {
    // What is new in every kept window, in one read; past the budget, each figure reads its own.
    await windows
      .readNew(
        reader,
        windowed.map((w) => w.ask),
        asks,
      )
      .catch((err: unknown) => {
        if (!cancelled(err)) throw err;
      });
    return Promise.all(
      windowed.map(async (w): Promise<number | null | "cancelled"> => {
        try {
          return await windowFigure(windows, reader, wholeReader, asks, w);
        } catch (err) {
          if (cancelled(err)) return "cancelled";
          throw err;
        }
      }),
    );
  };
  const [fromStatement, fromWindows] = await Promise.all([
    statementFigures(tx, bounded, statementAsks, casesRead),
    fromKeptWindows(),
  ]);
  return { fromStatement, casesRead, fromWindows };
}

/**
 * The figures asked for in one transaction at once (the cases of a starter batch run side by
 * side): the figures over keys known to have long histories from their kept windows, the rest
 * in one statement. On PostgreSQL they are read in the batch's transaction, under the budget; a
 * batch whose reads pass it reads them again beside the transaction, each case with the whole
 * budget. Null for a case whose figures passed the budget.
 */
const figuresOf = batcherPer(
  async (tx: Tx, asks: FiguresAsked[]): Promise<Array<Array<number | null> | null>> => {
    // A batch is of one transaction, so of one database.
    const db = (asks[0] as FiguresAsked).db;
    const { long, windows } = historiesOf(db);
    const bounded = db.boundedReads(HISTORY_BUDGET_MS) ?? undefined;
    const wholeReader = db.boundedReads(WINDOW_READ_BUDGET_MS) ?? tx;
    const windowed: Windowed[] = [];
    const rest = asks.map((ask, a) => {
      const index: number[] = [];
      ask.figures.forEach((figure, i) => {
        const w = long.size > 0 ? windowAskOf(long, ask.kase, figure) : undefined;
        if (w) windowed.push({ a, i, ask: w });
        else index.push(i);
      });
      return { ask: { ...ask, figures: index.map((i) => ask.figures[i] as Figure) }, index };
    });
    // A key's figures share one kept window: asked longest first, its first read spans them all
    // (asked shortest first, the longer window would read the key's links again).
    windowed.sort(
      (x, y) => y.ask.to.getTime() - y.ask.from.getTime() - (x.ask.to.getTime() - x.ask.from.getTime()),
    );
    const statementAsks = rest.map((r) => r.ask);
    let reads: Reads | undefined;
    if (bounded) {
      try {
        reads = await readInTransaction(tx, windows, wholeReader, asks, statementAsks, windowed);
      } catch (err) {
        if (!cancelled(err)) throw err;
      }
    }
    const { fromStatement, casesRead, fromWindows } =
      reads ?? (await readBeside(tx, windows, bounded, wholeReader, asks, statementAsks, windowed));
    // What each figure the statement answered tells of its key's history, by the case's figures:
    // the cases in its window (a count's value, the cases an amount's function read). A figure a
    // kept window answered tells nothing: an hour's count there says nothing of the key's length.
    const sizes: Array<Array<number | undefined>> = asks.map((ask) => ask.figures.map(() => undefined));
    const values = asks.map((ask, a) => {
      const part = fromStatement[a];
      if (!part) return null;
      const row: Array<number | null> = ask.figures.map(() => null);
      rest[a]?.index.forEach((i, k) => {
        row[i] = part[k] ?? null;
        const counted = COUNTED_FUNCTIONS.includes((ask.figures[i] as Figure).function);
        (sizes[a] as Array<number | undefined>)[i] = counted ? (part[k] ?? 0) : casesRead[a]?.[k];
      });
      return row;
    });
    windowed.forEach(({ a, i }, k) => {
      const value = fromWindows[k];
      const row = values[a];
      if (!row || value === undefined) return;
      if (value === "cancelled") values[a] = null;
      else row[i] = value;
    });
    values.forEach((row, a) => {
      const ask = asks[a];
      if (row && ask) long.learn(ask.kase, ask.figures, sizes[a] ?? []);
    });
    return values;
  },
  // 64 cases of at most 20 figures: 1,280 columns, within PostgreSQL's 1,664.
  { maxBatch: 64, lanes: 1 },
);

export const aggregateNode: NodeType<AggregateNode> = {
  type: "aggregate",
  effects: "transaction",
  replays: true,
  definition: {
    description:
      "Figures over the tenant's past cases sharing an entity with this case (count, sums of amounts, distinct entities) in a time window, read as `nodes.<id>.<name>`.",
    required: ["aggregates", "next"],
    properties: {
      aggregates: {
        type: "object",
        minProperties: 1,
        maxProperties: MAX_FIGURES,
        propertyNames: { pattern: FIGURE_NAME },
        additionalProperties: {
          type: "object",
          additionalProperties: false,
          required: ["function", "by", "window"],
          properties: {
            function: { enum: [...AGGREGATE_FUNCTIONS] },
            by: { enum: [...ENTITY_TYPES] },
            window: { type: "string", maxLength: 40, description: "ISO 8601 duration, PT1M to P400D" },
            field: { const: "amount" },
            distinct: { enum: [...ENTITY_TYPES] },
            caseType: { enum: [...CASE_TYPES] },
            decision: { enum: [...DECISION_VALUES] },
            tag: { type: "string", minLength: 1, maxLength: 64 },
          },
        },
      },
      next: schemaRef("nodeRef"),
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next"]),
  expressions: () => [],
  check(node, at, problems) {
    if (!isJsonObject(node.aggregates)) return;
    for (const [name, figure] of Object.entries(node.aggregates)) {
      if (!isJsonObject(figure)) continue;
      const path = `${at}.aggregates.${name}`;
      const fn = figure.function;
      if (typeof figure.window === "string") {
        const ms = parseWindow(figure.window);
        if (ms === undefined) {
          problems.push({
            path: `${path}.window`,
            message: "must be an ISO 8601 duration in weeks, days, hours, minutes or seconds (PT1H, P7D)",
          });
        } else if (ms < WINDOW_MIN || ms > WINDOW_MAX) {
          problems.push({ path: `${path}.window`, message: "must be between PT1M and P400D" });
        }
      }
      if (typeof fn === "string" && AMOUNT_FUNCTIONS.includes(fn) && figure.field === undefined) {
        problems.push({ path: `${path}.field`, message: `is required with ${fn}: the field is "amount"` });
      }
      if (typeof fn === "string" && !AMOUNT_FUNCTIONS.includes(fn) && figure.field !== undefined) {
        problems.push({ path: `${path}.field`, message: `is only for sum, avg, min and max, not ${fn}` });
      }
      if (fn === "countDistinct" && figure.distinct === undefined) {
        problems.push({
          path: `${path}.distinct`,
          message: "is required with countDistinct: the entity type counted",
        });
      }
      if (fn !== "countDistinct" && figure.distinct !== undefined) {
        problems.push({ path: `${path}.distinct`, message: "is only for countDistinct" });
      }
    }
  },
  compile(node) {
    const aggregates = node.aggregates as Record<string, FigureDefinition>;
    return {
      id: node.id,
      type: "aggregate",
      next: node.next as string,
      figures: Object.entries(aggregates).map(([name, d]) => ({
        name,
        definition: d,
        figure: {
          function: d.function,
          by: d.by,
          windowMs: parseWindow(d.window) as number,
          ...(d.distinct ? { distinct: d.distinct } : {}),
          ...(d.caseType ? { caseType: d.caseType } : {}),
          ...(d.decision ? { decision: d.decision } : {}),
          ...(d.tag ? { tag: d.tag } : {}),
        },
      })),
    };
  },
  async evaluate(node, { ctx, tx, case: kase, replay }) {
    if (replay) return replayFigures(node, kase, replay);
    const output: Record<string, number | null> = {};
    const figures: Array<Record<string, unknown>> = [];
    const values = await figuresOf(tx).add({ db: ctx.db, kase, figures: node.figures.map((f) => f.figure) });
    if (values === null) {
      return {
        kind: "fail",
        message: `node ${node.id}: its figures took longer than ${HISTORY_BUDGET_MS} ms to compute; the case failed rather than hold up others`,
        explain: { figures },
      };
    }
    node.figures.forEach(({ name, definition }, i) => {
      const value = values[i] ?? null;
      Object.defineProperty(output, name, { value, enumerable: true, writable: true, configurable: true });
      figures.push({ name, ...definition, value });
    });
    return { kind: "continue", next: node.next, output, explain: { figures } };
  },
  describe(entry) {
    if (entry.status !== "completed") return describeEnd(entry);
    const figures = Array.isArray(entry.figures) ? entry.figures.filter(isJsonObject) : [];
    return [
      ...figures.map(
        (f) => `${f.name}: ${describeFigure(f as unknown as FigureDefinition & { value: unknown })}`,
      ),
      ...describeEnd(entry),
    ];
  },
};

/** Whether a figure recorded in a trace entry is the one this definition asks for. */
function sameFigure(recorded: Record<string, unknown>, name: string, d: FigureDefinition): boolean {
  const keys = ["function", "by", "window", "field", "distinct", "caseType", "decision", "tag"] as const;
  return recorded.name === name && keys.every((k) => recorded[k] === d[k]);
}

/**
 * A backtest's figures: those the case computed (the same name and definition) as it recorded
 * them, any other computed now as of the case's own time (decision 0027).
 */
async function replayFigures(node: AggregateNode, kase: NodeCase, replay: NodeReplay): Promise<NodeOutcome> {
  const recorded = replay.step?.explain?.figures;
  const past = Array.isArray(recorded) ? recorded.filter(isJsonObject) : [];
  const output: Record<string, number | null> = {};
  const figures: Array<Record<string, unknown>> = [];
  const recordedValues = node.figures.map(({ name, definition }) => {
    const same = past.find((f) => sameFigure(f, name, definition));
    return same && (typeof same.value === "number" || same.value === null)
      ? { value: same.value }
      : undefined;
  });
  // The figures the case never computed, together, as of its own time.
  const missing = node.figures.filter((_, i) => recordedValues[i] === undefined);
  const computed = await computeFigures(
    replay.db,
    kase,
    missing.map((f) => f.figure),
  );
  let next = 0;
  node.figures.forEach(({ name, definition }, i) => {
    const kept = recordedValues[i];
    const value = kept ? kept.value : (computed[next++] ?? null);
    Object.defineProperty(output, name, { value, enumerable: true, writable: true, configurable: true });
    figures.push({ name, ...definition, value });
  });
  return { kind: "continue", next: node.next, output, explain: { figures } };
}

const UNITS: Array<[number, string]> = [
  [7 * 24 * 60 * MINUTE, "week"],
  [24 * 60 * MINUTE, "day"],
  [60 * MINUTE, "hour"],
  [MINUTE, "minute"],
  [1000, "second"],
];

/** `the last hour`, `the last 7 days`, `the last 90 minutes`. */
export function windowInWords(window: string): string {
  const ms = parseWindow(window);
  if (ms === undefined) return window;
  // Weeks only where the window was written in weeks: P7D reads "7 days".
  for (const [size, unit] of UNITS.filter(([, unit]) => unit !== "week" || window.includes("W"))) {
    if (ms % size === 0) {
      const n = ms / size;
      return n === 1 ? `the last ${unit}` : `the last ${n} ${unit}s`;
    }
  }
  return window;
}

const plural = (n: unknown, one: string, many: string) => (n === 1 ? one : many);

/** A figure in words: `14 cases of this customer in the last hour`. */
export function describeFigure(f: FigureDefinition & { value: unknown }): string {
  const of = `of this ${f.by.replaceAll("_", " ")}`;
  const filters = [
    f.caseType ? `${f.caseType} ` : "",
    f.decision ? `${f.decision.replace("_", " ")} ` : "",
  ].join("");
  const tagged = f.tag ? ` tagged ${f.tag}` : "";
  const when = windowInWords(f.window);
  const cases = `${filters}cases ${of}${tagged} in ${when}`;
  switch (f.function) {
    case "count":
      return `${f.value} ${filters}${plural(f.value, "case", "cases")} ${of}${tagged} in ${when}`;
    case "countDistinct":
      return `${f.value} distinct ${(f.distinct ?? "").replaceAll("_", " ")} ${plural(f.value, "value", "values")} on the ${cases}`;
    case "sum":
      return `${f.value} in total on the ${cases}`;
    case "avg":
      return f.value === null ? `no average: no ${cases}` : `${f.value} on average on the ${cases}`;
    default:
      return f.value === null
        ? `no ${f.function}imum: no ${cases}`
        : `${f.value} at the ${f.function === "min" ? "least" : "most"} on the ${cases}`;
  }
}
