import { isJsonObject, type JsonObject } from "../../workflows/index.js";

/** The clause at `index` of a list of the node's definition (`rules`, `cases`), when known. */
export function clauseAt(
  definition: JsonObject | undefined,
  field: string,
  index: unknown,
): JsonObject | undefined {
  const list = definition?.[field];
  if (!Array.isArray(list) || typeof index !== "number") return undefined;
  const clause = list[index];
  return isJsonObject(clause) ? clause : undefined;
}

/** `rule 2 (payload.amount > 1000) held`, or `no rule held: the default`. */
export function matchedClause(noun: string, matched: unknown, when: unknown): string {
  if (typeof matched !== "number") return `no ${noun} held: the default`;
  return `${noun} ${matched + 1}${typeof when === "string" ? ` (${when})` : ""} held`;
}
