import type { FastifyRequest } from "fastify";
import { badRequest } from "../../platform/errors.js";

type FormBody = Record<string, string | string[] | undefined>;

// A form body is percent-decoded UTF-8, which has no lone surrogates; NUL is what remains that
// PostgreSQL cannot store.
const UNSTORABLE = "\u0000";
const FORM_TYPE = "application/x-www-form-urlencoded";

/**
 * The body of a form post, or 400: the console's routes read forms, and anything else a client
 * sends them (a JSON document, numbers, nested objects) is refused before a route reads it.
 */
function formBody(request: FastifyRequest): FormBody {
  const body = request.body;
  if (body === undefined || body === null) return {};
  const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  if (type !== FORM_TYPE || typeof body !== "object" || Array.isArray(body)) {
    throw badRequest(`send the form as ${FORM_TYPE}`);
  }
  for (const [name, value] of Object.entries(body)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const one of values) {
      if (typeof one !== "string") throw badRequest(`the field ${name} is not a form value`);
      if (one.includes(UNSTORABLE))
        throw badRequest(`the field ${name} holds a character that cannot be stored`);
    }
  }
  return body as FormBody;
}

/**
 * A posted form's values: `text` trimmed, `raw` as sent (passwords), `list` for repeated names.
 * What is not a form, and a NUL character (which PostgreSQL cannot store), are refused with 400
 * before anything runs.
 */
export function formOf(request: FastifyRequest) {
  const body = formBody(request);
  const first = (name: string): string => {
    const value = body[name];
    return (Array.isArray(value) ? value[0] : value) ?? "";
  };
  return {
    raw: first,
    text: (name: string) => first(name).trim(),
    list: (name: string): string[] => {
      const value = body[name];
      return value === undefined ? [] : Array.isArray(value) ? value : [value];
    },
    has: (name: string) => body[name] !== undefined,
  };
}

export type Form = ReturnType<typeof formOf>;

/** A `YYYY-MM-DD` filter value as the UTC midnight it starts (`next`: the one after it ends). */
export function utcDay(value: string | undefined, what: string, next = false): Date | undefined {
  if (!value) return undefined;
  const at = /^\d{4}-\d\d-\d\d$/.test(value) ? new Date(`${value}T00:00:00Z`) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw badRequest(`${what} is not a date (YYYY-MM-DD)`);
  return next ? new Date(at.getTime() + 86_400_000) : at;
}
