import { runIfMain } from "../lib/harness.js";
import { insertStoredCase } from "../lib/provision.js";
import { round } from "../lib/stats.js";
import type { Scenario } from "../lib/types.js";

/**
 * The foundation's hot path: an authenticated read (key check, scope, rate limit bucket, tenant
 * scoped query) against the process's ceiling, `GET /health`, on the same server in the same run.
 */
const scenario: Scenario = {
  name: "tags",
  description: "authenticated GET /cases/{id}/tags against GET /health on the same server",
  async run(ctx) {
    const server = await ctx.startServer();
    const partner = await server.partner({ scopes: ["tags:read", "tags:write"], tags: ["vip", "watch"] });
    const caseId = await server.withDb((db) => insertStoredCase(db, partner.tenantId, "decided"));
    for (const tag of ["vip", "watch"]) {
      const res = await fetch(`${server.url}/cases/${caseId}/tags`, {
        method: "POST",
        headers: { ...partner.headers, "content-type": "application/json" },
        body: JSON.stringify({ tag }),
      });
      if (res.status !== 201) throw new Error(`tagging the case answered ${res.status}: ${await res.text()}`);
    }

    const [health, tags] = await ctx.load([
      { name: "GET /health", baseUrl: () => server.url, path: "/health" },
      {
        name: "GET /cases/{id}/tags",
        baseUrl: () => server.url,
        path: `/cases/${caseId}/tags`,
        headers: partner.headers,
      },
    ]);
    if (!health || !tags) throw new Error("the load generator returned no result");
    const figures = (r: typeof health) => ({
      "req/s": round(r.requestsPerSecond),
      "p50 ms": round(r.p50Ms),
      "p99 ms": round(r.p99Ms),
    });
    return {
      rows: [
        { name: health.name, figures: { ...figures(health), "of /health": 1 } },
        {
          name: tags.name,
          figures: {
            ...figures(tags),
            "of /health": round(tags.requestsPerSecond / health.requestsPerSecond),
          },
        },
      ],
      notes: [`database: ${server.database}; the case carries 2 tags; the key has no rate limit`],
    };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
