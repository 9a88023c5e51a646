import { TimeCell } from "../components.js";
import type { PageContext } from "../layout.js";
import { SettingsLayout, TablePanel } from "./layout.js";

/** A configured verification provider, as Settings › Providers lists it. */
export interface ProviderRow {
  brokerId: string;
  baseUrl: string;
  configuredAt: string;
}

/** Settings › Providers: the verification providers configured for the tenant (read only). */
export function ProvidersView({ page, providers }: { page: PageContext; providers: ProviderRow[] }) {
  return (
    <SettingsLayout
      page={page}
      title="Providers"
      intro="Verification providers (identity verification, sanctions screening) your workflows call."
    >
      <TablePanel
        id="providers"
        title="Configured providers"
        rows={providers}
        empty="No provider is configured for your team. Ask your operator to configure one."
        columns={["Provider", "Base URL", "Configured"]}
        row={(p) => (
          <>
            <td class="mono">{p.brokerId}</td>
            <td class="mono small">{p.baseUrl}</td>
            <TimeCell iso={p.configuredAt} />
          </>
        )}
      />
    </SettingsLayout>
  );
}
