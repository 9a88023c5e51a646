import { Ajv2020, type ErrorObject, type Options, type ValidateFunction } from "ajv/dist/2020.js";
import type { RegExpEngine } from "ajv/dist/types/index.js";
import type { ErrorDetail } from "../../platform/errors.js";
import { addFormats } from "../../platform/http.js";
import { compilePattern, matchWork, REGEX_LIMITS } from "./regex.js";

/**
 * JSON Schema 2020-12 with Ajv: the input schemas of workflows (checked at creation, compiled
 * once per version, then run against every case payload), and Ajv's errors as `{path, message}`
 * details whose paths read like JavaScript (`nodes[2].rules[0].when`, `payload.items[0].sku`).
 */

export const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";

/**
 * `pattern` and `patternProperties` run on RE2 (linear time): a tenant's schema must not be able
 * to hold the event loop with a backtracking pattern (`^(a+)+$`). RE2 refuses what it cannot run
 * in linear time (backreferences, lookaround), and `compilePattern` a program past its size
 * limit, so such a schema is refused at creation. Each match is paid for, before it runs, from
 * the work allowed to one payload (`validateBounded`).
 */
const re2Engine: RegExpEngine = Object.assign(
  (pattern: string) => {
    const re = compilePattern(pattern);
    return {
      test(text: string) {
        if (work) {
          work.left -= matchWork(re, text);
          if (work.left < 0) throw new PatternWorkExceeded();
        }
        return re.test(text);
      },
      // Ajv shares compiled patterns between schemas by this string.
      toString: () => `re2:${pattern}`,
    };
  },
  { code: "re2js" },
);

class PatternWorkExceeded extends Error {}

/** The pattern work left to the payload being validated (validation is synchronous). */
let work: { left: number } | undefined;

/**
 * Pattern work (program size × text length) a payload's validation may do on the event loop;
 * past it, the validation moves to a thread with a deadline (decision 0024). Ordinary payloads
 * do a few thousand.
 */
export const INLINE_SCHEMA_WORK = 50_000;

/** The validation passed the work allowed on the event loop: run it on a thread instead. */
export const ON_THREAD = Symbol("on a thread");

/**
 * Runs a compiled input schema against a payload with its patterns' work bounded: past
 * `REGEX_LIMITS.schemaWork` (program size × text length, summed), the payload is refused with
 * one problem saying so instead of being matched on. With a smaller `allowance`, passing it
 * answers `ON_THREAD` instead, unless the work counted is past the whole allowance already.
 */
export function validateBounded(
  validate: ValidateFunction,
  payload: unknown,
  root: string,
  allowance: number = REGEX_LIMITS.schemaWork,
): ErrorDetail[] | typeof ON_THREAD {
  const outer = work;
  const mine = { left: allowance };
  work = mine;
  try {
    return validate(payload) ? [] : detailsOf(validate.errors ?? [], root);
  } catch (err) {
    if (!(err instanceof PatternWorkExceeded)) throw err;
    // Work counted already past the whole allowance (one long string does it before its match
    // runs) is refused here: a thread would refuse it too, after a copy of the payload.
    if (allowance < REGEX_LIMITS.schemaWork && allowance - mine.left <= REGEX_LIMITS.schemaWork)
      return ON_THREAD;
    return [
      {
        path: root,
        message:
          "is too long for the input schema's patterns to check: the strings they apply to may total " +
          `${REGEX_LIMITS.schemaWork} characters × pattern size`,
      },
    ];
  } finally {
    work = outer;
  }
}

/** A payload to validate on a thread against a version's input schema (versions never change). */
export interface SchemaTask {
  version: string;
  schema: Record<string, unknown>;
  payload: unknown;
}

const threadValidators = new Map<string, ValidateFunction>();

/** Validates a payload handed to a thread, with the whole pattern work allowed to a payload. */
export function validateTask(task: SchemaTask): ErrorDetail[] {
  let validate = threadValidators.get(task.version);
  if (!validate) {
    validate = compileInputSchema(task.schema);
    if (threadValidators.size >= 100) threadValidators.delete(threadValidators.keys().next().value as string);
    threadValidators.set(task.version, validate);
  }
  return validateBounded(validate, task.payload, "payload") as ErrorDetail[];
}

const OPTIONS: Options = {
  code: { regExp: re2Engine },
  allErrors: true,
  // Unknown keywords and formats are refused: a typo must not silently accept every payload.
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  validateFormats: true,
  // Compiled validators live in our cache of compiled versions, not in Ajv's registry.
  addUsedSchema: false,
};

export function createAjv(options: Options = {}): Ajv2020 {
  const ajv = new Ajv2020({ ...OPTIONS, ...options });
  addFormats(ajv as never);
  return ajv;
}

const inputSchemas = createAjv();

/** Every problem of a workflow's `inputSchema`, at paths under `root`; empty when usable. */
export function checkInputSchema(schema: Record<string, unknown>, root: string): ErrorDetail[] {
  if (schema.$schema !== undefined && schema.$schema !== DRAFT_2020_12) {
    return [
      { path: `${root}.$schema`, message: `must be "${DRAFT_2020_12}" (JSON Schema 2020-12) or absent` },
    ];
  }
  if (!inputSchemas.validateSchema(schema)) {
    return detailsOf(inputSchemas.errors ?? [], root, { onePerPath: true });
  }
  try {
    // An asynchronous validator answers with a promise, which would pass every payload.
    if ((compileInputSchema(schema) as { $async?: boolean }).$async)
      return [{ path: `${root}.$async`, message: "is not supported" }];
    return [];
  } catch (err) {
    return [{ path: root, message: `is not a usable JSON Schema 2020-12: ${(err as Error).message}` }];
  }
}

/** Compiles an input schema already checked by `checkInputSchema`. */
export function compileInputSchema(schema: Record<string, unknown>): ValidateFunction {
  try {
    return inputSchemas.compile(schema);
  } finally {
    inputSchemas.removeSchema(schema);
  }
}

/** `/nodes/2/rules/0/when` under `root` → `root.nodes[2].rules[0].when`. */
export function pathOf(root: string, pointer: string, ...extra: string[]): string {
  const segments = pointer
    .split("/")
    .slice(1)
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  let path = root;
  for (const segment of [...segments, ...extra]) {
    if (/^\d+$/.test(segment)) path += `[${segment}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) path += path === "" ? segment : `.${segment}`;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path === "" ? "(root)" : path;
}

const ARTICLE: Record<string, string> = {
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "a boolean",
  object: "an object",
  array: "an array",
  null: "null",
};

function plural(n: unknown, one: string, many = `${one}s`): string {
  return `${String(n)} ${n === 1 ? one : many}`;
}

export interface DetailOptions {
  /** Keep one problem per path (meta-schema errors repeat one mistake under each branch). */
  onePerPath?: boolean;
  /** Messages for failing patterns, by pattern. */
  patternMessages?: Record<string, string>;
}

/** Ajv's errors as details: one per real problem, with a message a person can act on. */
export function detailsOf(errors: ErrorObject[], root: string, options: DetailOptions = {}): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    // Wrappers whose inner errors are already listed.
    if (["if", "anyOf", "oneOf", "propertyNames", "not"].includes(e.keyword)) continue;
    const params = e.params as Record<string, unknown>;
    const extra: string[] = [];
    let message = e.message ?? "is invalid";
    if (e.propertyName !== undefined) extra.push(e.propertyName);
    switch (e.keyword) {
      case "required":
        extra.push(String(params.missingProperty));
        message = "is required";
        break;
      case "additionalProperties":
        extra.push(String(params.additionalProperty));
        message = "is not a known property";
        break;
      case "type":
        message = `must be ${String(params.type)
          .split(",")
          .map((t) => ARTICLE[t] ?? t)
          .join(" or ")}`;
        break;
      case "enum":
        message = `must be one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
        break;
      case "const":
        message = `must be ${JSON.stringify(params.allowedValue)}`;
        break;
      case "minItems":
        message = `must have at least ${plural(params.limit, "item")}`;
        break;
      case "maxItems":
        message = `must have at most ${plural(params.limit, "item")}`;
        break;
      case "maxProperties":
        message = `must have at most ${plural(params.limit, "entry", "entries")}`;
        break;
      case "minLength":
        message =
          params.limit === 1 ? "must not be empty" : `must be at least ${plural(params.limit, "character")}`;
        break;
      case "maxLength":
        message = `must be at most ${plural(params.limit, "character")}`;
        break;
      case "minimum":
        message = `must be at least ${String(params.limit)}`;
        break;
      case "maximum":
        message = `must be at most ${String(params.limit)}`;
        break;
      case "format":
        message = `must be a valid ${String(params.format)}`;
        break;
      case "pattern": {
        const pattern = String(params.pattern);
        message = options.patternMessages?.[pattern] ?? `must match the pattern ${pattern}`;
        if (e.propertyName !== undefined) message = `is not an allowed key: ${message}`;
        break;
      }
    }
    const path = pathOf(root, e.instancePath, ...extra);
    const key = options.onePerPath ? path : `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path, message });
  }
  return details;
}
