import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Command } from "commander";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { CliContext } from "../cli/context.js";
import type { AppContext } from "./context.js";
import type { JobHandler } from "./jobs.js";

/** The Fastify instance every route file registers on, typed by its TypeBox schemas. */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A feature: its routes (partner and operator), the durable jobs it runs, its CLI commands. */
export interface FeatureModule {
  readonly name: string;
  routes?(app: App, ctx: AppContext): void | Promise<void>;
  jobs?(ctx: AppContext): JobHandler[];
  /** Operator commands, each a call of the operator API. */
  cli?(program: Command, cli: CliContext): void;
}
