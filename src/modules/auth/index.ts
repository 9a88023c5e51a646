import { feature } from "../../platform/app-types.js";
import { apiKeysCli } from "./api-keys.cli.js";
import { apiKeysRoutes } from "./api-keys.routes.js";
import { installAuth } from "./auth.plugin.js";

/** API keys and the authentication of every request (keys, the operator token, scopes). */
export const authModule = feature("auth", {
  tables: ["api_keys"],
  install: installAuth,
  routes: apiKeysRoutes,
  cli: apiKeysCli,
});

export {
  /** Whether a key is live, as a condition for another module's write that confirms it. */
  isLiveKey,
} from "./api-keys.repo.js";
export {
  /** An API key as the operator API shows it (never its value). */
  type ApiKeyView,
  /** The key a partner request was let in with. */
  type AuthenticatedKey,
  /** The audit rows of a key's creation and deletion (never its value). */
  apiKeyAudit,
  /** Looks up a key let in unconfirmed: 401 when it is no longer live. */
  confirmKey,
  /** Issues an API key with scopes; its value is in the answer, once. */
  createApiKey,
  /** The tenant's API keys, without their values. */
  getApiKeys,
  /** Revokes an API key at once. */
  removeApiKey,
} from "./api-keys.service.js";
export {
  /** Who a partner route's change is by, for the audit log (`apikey:<keyId>`). */
  partnerBy,
  /** The authenticated key of a partner route */
  partnerOf,
} from "./auth.plugin.js";
export {
  /** The scopes of the partner interface */
  SCOPES,
} from "./scopes.js";
