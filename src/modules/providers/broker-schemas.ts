import { Ajv, type ValidateFunction } from "ajv";
import type { ErrorDetail } from "../../platform/errors.js";
import { fieldPath } from "../../platform/http.js";

/**
 * Checks values against the JSON Schemas brokers declare (node configs, credentials, action
 * params), with every problem as a `{path, message}` detail under `root`.
 */
const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
const compiled = new WeakMap<object, ValidateFunction>();

export function problemsOf(schema: Record<string, unknown>, value: unknown, root: string): ErrorDetail[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string };
    const prop = params.missingProperty ?? params.additionalProperty;
    const pointer = `${e.instancePath}${prop ? `/${prop}` : ""}`;
    const message =
      e.keyword === "required"
        ? "is required"
        : e.keyword === "additionalProperties"
          ? "is not a known property"
          : (e.message ?? "is invalid");
    const sub = fieldPath(pointer);
    return { path: sub ? (sub.startsWith("[") ? `${root}${sub}` : `${root}.${sub}`) : root, message };
  });
}
