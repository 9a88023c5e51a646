import { OpenSanctionsSimulator } from "../../src/modules/providers/brokers/opensanctions/opensanctions.simulator.js";
import { SumsubSimulator } from "../../src/modules/providers/brokers/sumsub/sumsub.simulator.js";
import type { RunningSimulator } from "../../src/modules/providers/simulator.js";
import type { App } from "../../src/platform/app-types.js";
import { adminHeaders } from "./fixtures.js";

export const SUMSUB_CREDENTIALS = { appToken: "sbx:tests-app-token", secretKey: "tests-sumsub-secret-key" };
export const SUMSUB_WEBHOOK_SECRET = "tests-sumsub-webhook-secret";
export const OPENSANCTIONS_API_KEY = "tests-opensanctions-key";

/**
 * The vendor simulators as real HTTP servers, and the provider configurations that point a
 * tenant at them. `appUrl` is where the service listens, for the vendor's webhooks.
 */
export interface ProviderRig {
  sumsub: SumsubSimulator;
  opensanctions: OpenSanctionsSimulator;
  sumsubUrl: string;
  opensanctionsUrl: string;
  /** Configures both brokers for the tenant; the Sumsub simulator's webhooks go to this tenant. */
  configure(
    app: App,
    tenantId: string,
    extra?: { timeoutMs?: number },
  ): Promise<{ inboundWebhookUrl: string }>;
  close(): Promise<void>;
}

export async function startProviderRig(appUrl: string): Promise<ProviderRig> {
  const sumsub = new SumsubSimulator({ ...SUMSUB_CREDENTIALS, webhookSecret: SUMSUB_WEBHOOK_SECRET });
  const opensanctions = new OpenSanctionsSimulator({ apiKey: OPENSANCTIONS_API_KEY });
  const servers: RunningSimulator[] = [await sumsub.listen(0), await opensanctions.listen(0)];
  const [s, o] = servers as [RunningSimulator, RunningSimulator];
  return {
    sumsub,
    opensanctions,
    sumsubUrl: s.url,
    opensanctionsUrl: o.url,
    async configure(app, tenantId, extra = {}) {
      const put = async (brokerId: string, payload: unknown) => {
        const res = await app.inject({
          method: "PUT",
          url: `/admin/tenants/${tenantId}/providers/${brokerId}`,
          headers: adminHeaders,
          payload: payload as object,
        });
        if (res.statusCode !== 200)
          throw new Error(`configuring ${brokerId} answered ${res.statusCode}: ${res.body}`);
        return res.json() as { inboundWebhookUrl: string };
      };
      const configured = await put("sumsub", {
        baseUrl: s.url,
        credentials: SUMSUB_CREDENTIALS,
        webhookSecret: SUMSUB_WEBHOOK_SECRET,
        ...extra,
      });
      await put("opensanctions", {
        baseUrl: o.url,
        credentials: { apiKey: OPENSANCTIONS_API_KEY },
        ...extra,
      });
      // The configured public URL is not where this test's service listens: keep the path only.
      const path = new URL(configured.inboundWebhookUrl).pathname;
      sumsub.setWebhook(`${appUrl}${path}`, SUMSUB_WEBHOOK_SECRET);
      return { inboundWebhookUrl: `${appUrl}${path}` };
    },
    async close() {
      for (const server of servers) await server.close();
    },
  };
}
