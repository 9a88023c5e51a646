import { setTimeout as sleep } from "node:timers/promises";
import { percentile } from "./stats.js";
import type { BenchServer } from "./types.js";

/** A case as the operator API lists it: what decision latencies are measured from. */
export interface CaseSummary {
  status: string;
  externalCustomerId: string | null;
  createdAt: string;
  decision: { decidedAt: string } | null;
}

/** Every case of the tenant created in [from, to), through the operator API (either database). */
export async function casesOf(
  server: BenchServer,
  tenantId: string,
  from: Date,
  to: Date,
): Promise<CaseSummary[]> {
  const all: CaseSummary[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({
      tenantId,
      createdFrom: from.toISOString(),
      createdTo: to.toISOString(),
      limit: "100",
      ...(cursor ? { cursor } : {}),
    });
    const page: { cases: CaseSummary[]; nextCursor: string | null } = await server.admin(
      "GET",
      `/admin/cases?${query}`,
    );
    all.push(...page.cases);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

export interface Decisions {
  decided: number;
  /** Cases that ended `failed` instead of decided (a budget exceeded, an error). */
  failed: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Decisions per second from the first submission to the last decision; submission-to-decision latency. */
export function decisionsIn(cases: readonly CaseSummary[]): Decisions {
  const decided = cases.filter((c) => c.decision !== null);
  const failed = cases.filter((c) => c.status === "failed").length;
  if (decided.length === 0) return { decided: 0, failed, perSecond: 0, p50Ms: 0, p99Ms: 0 };
  const created = decided.map((c) => Date.parse(c.createdAt));
  const at = decided.map((c) => Date.parse(c.decision?.decidedAt as string));
  const latencies = decided.map((_, i) => (at[i] as number) - (created[i] as number));
  const span = (Math.max(...at) - Math.min(...created)) / 1000;
  return {
    decided: decided.length,
    failed,
    perSecond: span > 0 ? decided.length / span : 0,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** Waits until no case of the tenant is still on its way to a decision. */
export async function drained(server: BenchServer, tenantId: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let busy = 0;
    for (const status of ["received", "running"]) {
      const page: { cases: unknown[] } = await server.admin(
        "GET",
        `/admin/cases?tenantId=${tenantId}&status=${status}&limit=1`,
      );
      busy += page.cases.length;
    }
    if (busy === 0) return;
    if (Date.now() > deadline) throw new Error(`cases still undecided after ${timeoutMs} ms`);
    await sleep(200);
  }
}
