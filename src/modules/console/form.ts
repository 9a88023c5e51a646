import type { FastifyRequest } from "fastify";
import { badRequest } from "../../platform/errors.js";

type FormBody = Record<string, string | string[] | undefined>;

// A form body is percent-decoded UTF-8, which has no lone surrogates; NUL is what remains that
// PostgreSQL cannot store.
const UNSTORABLE = "\u0000";

/**
 * A posted form's values: `text` trimmed, `raw` as sent (passwords), `list` for repeated names.
 * A NUL character, which PostgreSQL cannot store, is refused with 400 before anything runs.
 */
export function formOf(request: FastifyRequest) {
  const body: FormBody =
    typeof request.body === "object" && request.body !== null ? (request.body as FormBody) : {};
  for (const [name, value] of Object.entries(body)) {
    for (const one of Array.isArray(value) ? value : [value ?? ""]) {
      if (one.includes(UNSTORABLE))
        throw badRequest(`the field ${name} holds a character that cannot be stored`);
    }
  }
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
