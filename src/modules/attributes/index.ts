import { feature } from "../../platform/app-types.js";
import { attributesRoutes } from "./attributes.routes.js";

export const attributesModule = feature("attributes", {
  tables: ["customer_attributes"],
  routes: attributesRoutes,
});

export {
  /** The attributes of each case's customer, by case id (cases without one are left out). */
  getAttributesOf,
} from "./attributes.repo.js";
