import { sql } from "kysely";
import { runIfMain } from "../lib/harness.js";
import { round } from "../lib/stats.js";
import type { Scenario } from "../lib/types.js";

const CASES = Number(process.env.BENCH_CONSOLE_CASES ?? 100_000);
const GOAL_P99_MS = 100;

/** A browser's cookies over fetch: the session and the CSRF secret. */
class Cookies {
  readonly jar = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const [name, ...value] = (pair ?? "").split("=");
      if (name) this.jar.set(name.trim(), value.join("="));
    }
  }
  header(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

const csrfOf = (html: string) => /<meta name="csrf-token" content="([^"]+)"/.exec(html)?.[1] ?? "";

async function form(url: string, cookies: Cookies, values: Record<string, string>): Promise<Response> {
  const res = await fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookies.header(), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(values).toString(),
  });
  cookies.take(res);
  return res;
}

/**
 * The console's two heaviest pages for a tenant holding 100,000 cases: the review queue (first
 * page, and filtered) and a case page, against GET /health on the same server in the same run.
 * One connection, so each latency is one request's time in the server (plus loopback).
 */
const scenario: Scenario = {
  name: "console",
  description:
    "console queue and case pages (one connection) for a tenant of 100,000 cases, against GET /health",
  async run(ctx) {
    const server = await ctx.startServer();
    const partner = await server.partner({ scopes: ["cases:read"], tags: ["vip", "fraud-ring"] });
    const user = await server.admin<{ setupUrl: string; email: string }>(
      "POST",
      `/admin/tenants/${partner.tenantId}/users`,
      { email: "bench.analyst@example.com", name: "Bench Analyst", role: "analyst" },
    );
    const password = "a bench password of some length";
    const setup = new URL(user.setupUrl);
    const cookies = new Cookies();
    const setupPage = await fetch(`${server.url}${setup.pathname}${setup.search}`);
    cookies.take(setupPage);
    const token = setup.searchParams.get("token") ?? "";
    const set = await form(`${server.url}/console/setup`, cookies, {
      _csrf: csrfOf(await setupPage.text()),
      token,
      password,
      confirm: password,
    });
    if (set.status !== 303) throw new Error(`setting the password answered ${set.status}`);
    const signInPage = await fetch(`${server.url}/console/sign-in`, {
      headers: { cookie: cookies.header() },
    });
    cookies.take(signInPage);
    const signedIn = await form(`${server.url}/console/sign-in`, cookies, {
      _csrf: csrfOf(await signInPage.text()),
      email: user.email,
      password,
    });
    if (signedIn.status !== 303 || !cookies.jar.has("cds_console")) {
      throw new Error(`signing in answered ${signedIn.status}`);
    }

    ctx.log(`inserting ${CASES} cases`);
    const caseId = await server.withDb(async (db) => {
      await sql`
        INSERT INTO cases (id, tenant_id, request_id, status, type, workflow_id, workflow_version, subject,
                           payload, metadata, external_customer_id, decision, decision_history, dry_run,
                           created_at, updated_at)
        SELECT gen_random_uuid(), ${partner.tenantId}::uuid, 'bench-' || g,
               (ARRAY['in_review','in_review','in_review','in_review','waiting','waiting','failed',
                      'decided','decided','decided'])[1 + g % 10],
               (ARRAY['KYC','KYB','Transaction'])[1 + g % 3],
               (ARRAY['kyc-onboarding','payments'])[1 + g % 2], 1,
               json_build_object('displayName', 'Customer ' || g,
                                 'person', json_build_object('firstName', 'Ada', 'lastName', 'Lovelace ' || g)),
               json_build_object('amount', g % 50000), '{}'::json, 'cust-' || (g % 20000),
               CASE WHEN g % 10 < 4 THEN jsonb_build_object('value', 'in_review', 'source', 'workflow',
                      'actor', 'node:review', 'decidedAt', '2026-01-01T00:00:00.000Z') END,
               CASE WHEN g % 10 < 4 THEN jsonb_build_array(jsonb_build_object('value', 'in_review',
                      'source', 'workflow', 'actor', 'node:review', 'decidedAt', '2026-01-01T00:00:00.000Z'))
                    ELSE '[]'::jsonb END,
               false,
               now() - make_interval(mins => g), now() - make_interval(mins => g)
        FROM generate_series(1, ${CASES}::int) AS g`.execute(db.root);
      await sql`
        INSERT INTO case_tags (tenant_id, case_id, tag, created_by)
        SELECT tenant_id, id, 'vip', 'bench' FROM cases
        WHERE tenant_id = ${partner.tenantId}::uuid AND (request_id LIKE '%3' OR request_id LIKE '%7')`.execute(
        db.root,
      );
      await sql`
        INSERT INTO case_tags (tenant_id, case_id, tag, created_by)
        SELECT tenant_id, id, 'fraud-ring', 'bench' FROM cases
        WHERE tenant_id = ${partner.tenantId}::uuid AND request_id LIKE '%8'`.execute(db.root);
      await sql`ANALYZE cases`.execute(db.root);
      await sql`ANALYZE case_tags`.execute(db.root);
      const row = await sql<{ id: string }>`
        SELECT id FROM cases WHERE tenant_id = ${partner.tenantId}::uuid AND status = 'in_review'
        ORDER BY created_at LIMIT 1`.execute(db.root);
      return row.rows[0]?.id as string;
    });

    const headers = { cookie: cookies.header() };
    const results = await ctx.load(
      [
        { name: "GET /health", baseUrl: () => server.url, path: "/health" },
        { name: "queue, first page", baseUrl: () => server.url, path: "/console/queue", headers },
        {
          name: "queue, 4 filters",
          baseUrl: () => server.url,
          path: "/console/queue?status=in_review&type=KYC&workflowId=payments&tag=vip&age=24h",
          headers,
        },
        {
          // No case in review carries this tag: the worst case, nothing to stop the scan early.
          name: "queue, tag on no case in review",
          baseUrl: () => server.url,
          path: "/console/queue?status=in_review&tag=fraud-ring",
          headers,
        },
        { name: "case page", baseUrl: () => server.url, path: `/console/cases/${caseId}`, headers },
      ],
      { connections: 1 },
    );
    const health = results[0];
    if (!health) throw new Error("the load generator returned no result");
    const notes = [
      `database: ${server.database}; ${CASES} cases in the tenant (40% in review, 20% tagged vip), one connection`,
    ];
    for (const r of results.slice(1)) {
      notes.push(
        `${r.name}: p99 ${round(r.p99Ms)} ms, goal under ${GOAL_P99_MS} ms: ${r.p99Ms < GOAL_P99_MS ? "met" : "missed"}`,
      );
    }
    return {
      rows: results.map((r) => ({
        name: r.name,
        figures: {
          "req/s": round(r.requestsPerSecond),
          "p50 ms": round(r.p50Ms),
          "p99 ms": round(r.p99Ms),
          "req/s of /health": round(r.requestsPerSecond / health.requestsPerSecond),
        },
      })),
      notes,
    };
  },
};

export default scenario;
await runIfMain(import.meta.url, scenario);
