import type { FastifyRequest } from "fastify";

type FormBody = Record<string, string | string[] | undefined>;

/** A posted form's values: `text` trimmed, `raw` as sent (passwords), `list` for repeated names. */
export function formOf(request: FastifyRequest) {
  const body: FormBody =
    typeof request.body === "object" && request.body !== null ? (request.body as FormBody) : {};
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
