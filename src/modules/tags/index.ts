import { feature } from "../../platform/app-types.js";
import { tagsCli } from "./tags.cli.js";
import { listCaseTags } from "./tags.repo.js";
import { tagsRoutes } from "./tags.routes.js";
import { toTagView } from "./tags.service.js";

export const tagsModule = feature("tags", {
  tables: ["tag_options", "case_tags"],
  routes: tagsRoutes,
  cli: tagsCli,
  caseRecord: {
    tags: async (db, tenantId, caseId) => (await listCaseTags(db, tenantId, caseId)).map(toTagView),
  },
});

/** The ids of a tenant's cases with a tag, as a subquery for another module's query of cases. */
export { casesTagged } from "./tags.repo.js";
export {
  /** Applies a tag */
  applyTag,
  /** The tenant's tag vocabulary. */
  getTagOptions,
  /** Removes a tag from a case. */
  removeTag,
  /** Adds or changes a tag of the tenant's vocabulary. */
  setTagOption,
  /** A tag of the vocabulary as the operator API shows it. */
  type TagOptionView,
  /** The audit row of a change to the vocabulary. */
  tagOptionAudit,
} from "./tags.service.js";
