import type { AppContext } from "../../platform/context.js";
import { getProviderConfigs } from "../providers/index.js";
import type { ProviderRow } from "./views/settings/providers.js";

/** The tenant's configured verification providers, as the operator API lists them (no secrets). */
export async function listProviders(ctx: AppContext, tenantId: string): Promise<ProviderRow[]> {
  const configs = await getProviderConfigs(ctx, tenantId);
  return configs.map(({ brokerId, baseUrl, configuredAt }) => ({ brokerId, baseUrl, configuredAt }));
}
