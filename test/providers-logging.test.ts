import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import type { JobWorker } from "../src/platform/jobs.js";
import { createLogger } from "../src/platform/logger.js";
import { startWorker } from "../src/worker.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createPartner } from "./support/fixtures.js";
import {
  type ProviderRig,
  SUMSUB_CREDENTIALS,
  SUMSUB_WEBHOOK_SECRET,
  startProviderRig,
} from "./support/providers.js";
import { createWorkflow, eventsOf, waitForCase } from "./support/workflows.js";

/** The whole sumsub flow with every log line kept, at the most verbose level. */
let h: TestApp;
let app: App;
let worker: JobWorker;
let rig: ProviderRig;
const lines: string[] = [];

beforeAll(async () => {
  h = await createTestApp();
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  // At trace, every request is logged with its path too.
  const ctx: AppContext = {
    ...h.ctx,
    config: { ...h.ctx.config, logLevel: "trace" },
    log: createLogger("trace", sink),
  };
  app = await buildApp(ctx);
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  worker = await startWorker(ctx);
  rig = await startProviderRig(url);
});
afterAll(async () => {
  await worker.stop();
  await app.close();
  await rig.close();
  await h.close();
});

describe("logs of the provider flow", () => {
  it("never carry credentials, tokens, links or the customer's personal data, failures included", async () => {
    const partner = await createPartner(app);
    const { inboundWebhookUrl } = await rig.configure(app, partner.tenantId);
    const inboundToken = new URL(inboundWebhookUrl).pathname.split("/").at(-1) as string;
    await createWorkflow(app, partner.tenantId, "kyc", {
      inputSchema: { type: "object" },
      start: "idv",
      nodes: [
        {
          id: "idv",
          type: "provider",
          provider: "sumsub",
          config: { levelName: "basic-kyc-level" },
          next: "ok",
        },
        { id: "ok", type: "decision", decision: "approved" },
      ],
    });
    const res = await app.inject({
      method: "POST",
      url: "/cases",
      headers: partner.headers,
      payload: {
        workflowId: "kyc",
        type: "KYC",
        payload: {},
        subject: {
          displayName: "Ada Lovelace",
          person: {
            firstName: "Augusta",
            lastName: "Lovelace-Byron",
            email: "augusta@example.com",
            identifiers: [{ type: "external_customer_id", value: "cust-logging" }],
          },
        },
      },
    });
    const caseId = res.json().caseId as string;
    await waitForCase(app, partner.headers, caseId, (c) => c.status === "waiting");
    const note = (await eventsOf(h.ctx, caseId)).find((e) => e.event_type === "node.notification");
    if (!note) throw new Error("no idv-application-start notification");
    const output = (note.payload as { output: Record<string, string> }).output;
    const handle = output.pending_handle as string;
    const refreshed = await app.inject({
      method: "POST",
      url: `/pending/${handle}/actions/refresh_sdk_token`,
      headers: partner.headers,
    });
    await fetch(`${rig.sumsubUrl}/_simulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "prefill", status: 500, times: 3 }),
    });
    const failed = await app.inject({
      method: "POST",
      url: `/pending/${handle}/actions/prefill_applicant_info`,
      headers: partner.headers,
      payload: { params: { lastName: "Secretname" } },
    });
    expect(failed.statusCode).toBe(502);
    await rig.sumsub.review(output.applicant_id as string, { reviewAnswer: "GREEN" });
    await waitForCase(app, partner.headers, caseId, (c) => c.status === "decided");

    const all = lines.join("");
    expect(all).toContain("vendor call failed");
    expect(all).toContain("vendor event received");
    // The handle and the inbound token were in logged paths, and are hidden there.
    expect(all).toContain("/pending/…/actions/refresh_sdk_token");
    expect(all).toContain("/providers/sumsub/webhooks/…");
    for (const secret of [
      SUMSUB_CREDENTIALS.appToken,
      SUMSUB_CREDENTIALS.secretKey,
      SUMSUB_WEBHOOK_SECRET,
      handle,
      inboundToken,
      output.sdk_token as string,
      output.verification_url as string,
      refreshed.json().output.sdk_token as string,
      "Augusta",
      "Lovelace-Byron",
      "augusta@example.com",
      "Secretname",
    ]) {
      expect(all, secret).not.toContain(secret);
    }
  });
});
