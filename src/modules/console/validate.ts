import { Ajv, type ValidateFunction } from "ajv";
import type { TSchema } from "typebox";
import { badRequest } from "../../platform/errors.js";
import { addFormats } from "../../platform/http.js";
import { oncePer } from "../../platform/once-per.js";

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validatorOf = oncePer((schema: TSchema): ValidateFunction => ajv.compile(schema));

/**
 * Checks a form's values against the schema the API route of the same operation declares, so
 * that a rule the API enforces in its schema holds in the console too, from the same source.
 */
export function checkAgainst<T>(schema: TSchema, value: T, what: string): T {
  const validate = validatorOf(schema);
  if (validate(value)) return value;
  const details = (validate.errors ?? []).map((e) => ({
    path: `${what}${e.instancePath.replaceAll("/", ".")}`,
    message: e.message ?? "is invalid",
  }));
  throw badRequest(`${details.map((d) => `${d.path} ${d.message}`).join("; ")}`, details);
}
