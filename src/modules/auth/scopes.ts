/** The scopes of the partner interface; each partner endpoint requires exactly one. */
export const SCOPES = [
  "cases:write",
  "cases:read",
  "cases:callback",
  "attributes:write",
  "tags:read",
  "tags:write",
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
