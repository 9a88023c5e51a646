import { expect } from "vitest";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import { adminHeaders } from "./fixtures.js";

/** Creates a version of the workflow through the operator API; publishes it unless told not to. */
export async function createWorkflow(
  app: App,
  tenantId: string,
  workflowId: string,
  definition: WorkflowDefinition,
  options: { publish?: boolean } = {},
): Promise<number> {
  const created = await app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/workflows/${workflowId}/versions`,
    headers: adminHeaders,
    payload: definition,
  });
  if (created.statusCode !== 201)
    throw new Error(`creating workflow answered ${created.statusCode}: ${created.body}`);
  const version = created.json().version as number;
  if (options.publish !== false) {
    const published = await app.inject({
      method: "POST",
      url: `/admin/tenants/${tenantId}/workflows/${workflowId}/versions/${version}/publish`,
      headers: adminHeaders,
    });
    if (published.statusCode !== 200)
      throw new Error(`publishing answered ${published.statusCode}: ${published.body}`);
  }
  return version;
}

/** A one-rule workflow deciding on `payload.amount`: over 1000 in review, else approved. */
export const amountScreen: WorkflowDefinition = {
  inputSchema: {
    type: "object",
    properties: { amount: { type: "number" }, country: { type: "string" } },
    required: ["amount"],
  },
  start: "screen",
  nodes: [
    {
      id: "screen",
      type: "rules",
      rules: [{ when: "payload.amount > 1000", next: "review" }],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved", output: { reason: "'low amount'" } },
    { id: "review", type: "decision", decision: "in_review", output: { reason: "'high amount'" } },
  ],
};

export const kycSubject = {
  displayName: "Ada Lovelace",
  person: {
    firstName: "Ada",
    lastName: "Lovelace",
    dateOfBirth: "1990-12-10",
    nationality: "GB",
    identifiers: [{ type: "external_customer_id", value: "cust-42" }],
  },
};

export const transactionSubject = {
  displayName: "Payment 981",
  transaction: {
    amount: 250.5,
    currency: "EUR",
    direction: "outbound",
    method: "card",
    type: "payment",
    externalTransactionId: "tx-981",
    parties: [
      {
        role: "sender",
        displayName: "Ada",
        identifiers: [{ type: "external_customer_id", value: "cust-7" }],
      },
      { role: "merchant", displayName: "Shop" },
    ],
  },
};

/** Polls until the case leaves the in-flight statuses (or the timeout passes), then returns it. */
export async function waitForCase(
  app: App,
  headers: Record<string, string>,
  caseId: string,
  until: (c: { status: string }) => boolean = (c) => !["received", "running"].includes(c.status),
  timeoutMs = 15_000,
  // biome-ignore lint/suspicious/noExplicitAny: tests read the case record as loose JSON
): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await app.inject({ method: "GET", url: `/cases/${caseId}`, headers });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    if (until(body)) return body;
    if (Date.now() > deadline)
      throw new Error(`case ${caseId} is still ${body.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The outbox events of a case, oldest first. */
export async function eventsOf(ctx: AppContext, caseId: string) {
  return ctx.db.root
    .selectFrom("events")
    .select(["event_type", "webhook_key", "payload", "created_at"])
    .where("case_id", "=", caseId)
    .orderBy("created_at")
    .execute();
}

/** A score workflow: points per rule that holds, bands deciding on the total. */
export const riskScore: WorkflowDefinition = {
  inputSchema: {
    type: "object",
    properties: { amount: { type: "number" }, country: { type: "string" } },
    required: ["amount"],
  },
  start: "risk",
  nodes: [
    {
      id: "risk",
      type: "score",
      rules: [
        { when: "payload.amount > 10000", points: 40 },
        { when: "payload.amount > 1000", points: 20 },
        { when: "has(payload.country) && payload.country == 'GB'", points: 5 },
      ],
      bands: [
        { minScore: 0, decision: "approved" },
        { minScore: 20, decision: "in_review" },
        { minScore: 100, decision: "declined" },
      ],
      output: { score: "nodes.risk.score" },
    },
  ],
};
