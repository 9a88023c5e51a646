import { feature } from "../../platform/app-types.js";
import { listsCli } from "./lists.cli.js";
import { listsConsole } from "./lists.console.js";
import { listsRoutes } from "./lists.routes.js";
import { listSource } from "./lists.service.js";

/** Lists: a tenant's named sets of values, which workflows read with `inList` (contract section 7). */
export const listsModule = feature("lists", {
  tables: ["lists", "list_values"],
  routes: listsRoutes,
  cli: listsCli,
  console: listsConsole,
  listSource,
});

export {
  /** The limits of lists: values per list, per call, characters per value, page sizes. */
  LIST_LIMITS,
  /** How a list may normalise its values: `none`, or an entity type's rule. */
  NORMALIZE_RULES,
} from "./lists.service.js";
