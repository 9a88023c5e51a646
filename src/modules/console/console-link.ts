import type { Permission } from "../users/index.js";

/** A link to a feature's console page: in the main navigation, or as a tab of Settings. */
export interface ConsoleLink {
  readonly href: string;
  readonly title: string;
  /** Shown only to roles with this permission (the route checks it again). */
  readonly permission: Permission;
  readonly place: "main" | "settings";
}
