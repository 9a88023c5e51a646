import type { AppContext } from "../../platform/context.js";
import type { ProviderRow } from "./views/settings.js";

/**
 * The tenant's configured verification providers, or undefined while this build has no
 * providers feature: the screen then says so instead of showing an empty list.
 */
export async function listProviders(_ctx: AppContext, _tenantId: string): Promise<ProviderRow[] | undefined> {
  return undefined;
}
