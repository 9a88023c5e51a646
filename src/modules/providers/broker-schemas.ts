import { Ajv, type ValidateFunction } from "ajv";
import type { ErrorDetail } from "../../platform/errors.js";
import { fieldPath } from "../../platform/http.js";
import { oncePer } from "../../platform/once-per.js";

/**
 * Checks values against the JSON Schemas brokers declare (node configs, credentials, action
 * params), with every problem as a `{path, message}` detail under `root`.
 */
const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
const validatorOf = oncePer((schema: object): ValidateFunction => ajv.compile(schema));

export function problemsOf(schema: Record<string, unknown>, value: unknown, root: string): ErrorDetail[] {
  const validate = validatorOf(schema);
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
