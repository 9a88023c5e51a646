import { feature } from "../../platform/app-types.js";
import { usersCli } from "./users.cli.js";
import { usersRoutes } from "./users.routes.js";

export {
  type AuditBy,
  type AuditFilters,
  type AuditRow,
  audited,
  insertAudit,
  operatorActor,
  operatorBy,
  searchAudit,
} from "./audit.repo.js";
export { can, type Permission, permissionsOf, ROLES, type Role } from "./roles.js";
export {
  type ConsoleSession,
  SESSION_HOURS,
  SIGNIN_LIMITS,
  sessionFor,
  signIn,
  signOut,
} from "./sessions.service.js";
export * from "./users.service.js";

export const usersModule = feature("users", {
  tables: ["console_users", "console_sessions", "console_signin_failures", "console_audit"],
  routes: usersRoutes,
  cli: usersCli,
});

export {
  /** The shortest password a console user may set. */
  MIN_PASSWORD_LENGTH,
} from "./password.js";
