/** The console's roles (contract section 6), each a fixed set of permissions. */
export const ROLES = ["viewer", "analyst", "admin"] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = [
  "cases:read",
  "cases:review",
  "apikeys:write",
  "tags:manage",
  "webhooks:manage",
  "users:manage",
  "lists:manage",
  "workflows:read",
  "workflows:manage",
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const GRANTS: Record<Role, readonly Permission[]> = {
  viewer: ["cases:read"],
  analyst: ["cases:read", "cases:review", "workflows:read"],
  admin: PERMISSIONS,
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return GRANTS[role].includes(permission);
}

export function permissionsOf(role: Role): readonly Permission[] {
  return GRANTS[role];
}
