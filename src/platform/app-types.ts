import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Command } from "commander";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { Config } from "../config.js";
import type { CliContext } from "./cli/context.js";
import type { AppContext } from "./context.js";
import type { Db } from "./db/index.js";
import type { JobHandler, WorkerOptions } from "./jobs.js";

/** The Fastify instance every route file registers on, typed by its TypeBox schemas. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What a feature's start-up task gets: run once per start, after the migrations. */
export interface StartupContext {
  readonly config: Config;
  readonly db: Db;
  /** Reports what the task did, for the operator (a log line, or the CLI's output). */
  note(message: string, fields: object): void;
}

/** Something a feature runs beside the job worker in worker processes, started and stopped with it. */
export interface BackgroundWorker {
  /**
   * What must be ready before any part of the worker takes work (a thread's script loaded, say):
   * awaited before the job worker and every background part start, so that a process's start is
   * all or nothing, not work already running while a slow part loads.
   */
  prepare?(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Work in flight, counted in the worker's own `runningCount`. */
  readonly runningCount?: number;
}

/**
 * A feature, whole: everything it brings to the service, which the composition root (`app.ts`,
 * `worker.ts`, `main.ts`) iterates without naming any feature. Its tables are declared in the
 * feature's own `<feature>.tables.ts` (adding to the platform's `Database` type) and created by
 * its migrations in `migrations/<name>/`, numbered in one sequence with the platform's in
 * `migrations/` and every other feature's (a feature whose tables came with the platform's early
 * history has no folder); `tables` names them, for the ownership check. Modules may add members
 * to this interface (the workflows module adds `nodeTypes`).
 */
export interface FeatureModule {
  readonly name: string;
  /** The tables this feature alone writes. */
  readonly tables?: readonly string[];
  /** Hooks on the whole app (authentication), installed before any feature's routes. */
  install?(app: App, ctx: AppContext): void;
  /** Its routes (partner and operator API, console pages). */
  routes?(app: App, ctx: AppContext): void | Promise<void>;
  /** Sections of the OpenAPI document besides its routes (the `webhooks` the service posts). */
  openapi?: { webhooks?(): Record<string, unknown> };
  /** The durable jobs it runs on the general worker. */
  jobs?(ctx: AppContext): JobHandler[];
  /** What it runs beside the general worker, in worker processes (its own queues, loops). */
  background?(ctx: AppContext, options: WorkerOptions): BackgroundWorker[];
  /** Run once per start after the migrations, before the process serves (sealing stored secrets). */
  startup?(io: StartupContext): Promise<void>;
  /** Operator commands, each a call of the operator API. */
  cli?(program: Command, cli: CliContext): void;
}

/**
 * The feature named `name`, bringing `parts`. Its code is in `modules/<name>/`, and its
 * migrations, if it has any, in `migrations/<name>/`.
 */
export function feature(name: string, parts: Omit<FeatureModule, "name">): FeatureModule {
  return { name, ...parts };
}
