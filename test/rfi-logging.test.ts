import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { raiseRfiFromNode } from "../src/modules/rfi/rfi.node.js";
import type { App } from "../src/platform/app-types.js";
import type { AppContext } from "../src/platform/context.js";
import { adminHeaders, createPartner, createStoredCase } from "./support/fixtures.js";
import { type LoggedService, startLoggedService } from "./support/logged.js";
import { answerRfi, injectPut, listen, mintSlot, socketPut, waitFor } from "./support/rfi.js";

let service: LoggedService;
let app: App;
let ctx: AppContext;
let lines: string[];

beforeAll(async () => {
  service = await startLoggedService();
  ({ app, ctx, lines } = service);
});

afterAll(async () => {
  await service?.close();
});

it("never writes recipients, texts, answer values or upload signatures to the logs", async () => {
  const base = await listen(app);
  const partner = await createPartner(app);
  const caseId = await createStoredCase(ctx, partner.tenantId);
  await app.inject({
    method: "PUT",
    url: `/admin/tenants/${partner.tenantId}/webhooks/default`,
    headers: adminHeaders,
    payload: {
      url: "http://127.0.0.1:9/unreachable",
      secrets: [{ id: "s1", secret: "w".repeat(32) }],
      activeSecretId: "s1",
    },
  });
  const secret = {
    to: "marker.to.7f3a@example.com",
    cc: "marker.cc.7f3a@example.com",
    subject: "MARKER-SUBJECT-7f3a",
    body: "MARKER-BODY-7f3a",
    value: "MARKER-VALUE-7f3a",
    label: "MARKER-LABEL-7f3a",
    filename: "MARKER-FILE-7f3a.pdf",
  };
  const raised = await app.inject({
    method: "POST",
    url: `/cases/${caseId}/rfi`,
    headers: partner.headers,
    payload: { to: secret.to, cc: [secret.cc], subject: secret.subject, body: secret.body },
  });
  expect(raised.statusCode).toBe(201);
  const { rfiId } = raised.json();
  // Refused bodies carry personal data too.
  const badRaise = await app.inject({
    method: "POST",
    url: `/cases/${caseId}/rfi`,
    headers: partner.headers,
    payload: { to: secret.to, subject: secret.subject, body: secret.body, expiresAt: "not a date" },
  });
  expect(badRaise.statusCode).toBe(400);
  await ctx.db.transaction((tx) =>
    raiseRfiFromNode(ctx, tx, {
      tenantId: partner.tenantId,
      caseId,
      caseType: "KYC",
      dryRun: false,
      nodeId: "n1",
      to: secret.to,
      subject: secret.subject,
      body: secret.body,
      cc: undefined,
      templateId: undefined,
      webhookKey: undefined,
      awaitResponse: false,
      expiresAt: null,
    }),
  );
  await ctx.db
    .transaction((tx) =>
      raiseRfiFromNode(ctx, tx, {
        tenantId: partner.tenantId,
        caseId,
        caseType: "KYC",
        dryRun: false,
        nodeId: "n2",
        to: `not-an-address-${secret.to.replace("@", "-")}`,
        subject: secret.subject,
        body: secret.body,
        cc: undefined,
        templateId: undefined,
        webhookKey: undefined,
        awaitResponse: false,
        expiresAt: null,
      }),
    )
    .catch((err: unknown) => ctx.log.error({ err }, "node raise failed"));

  const bytes = Buffer.from("%PDF-1.7 marker");
  const minted = (
    await mintSlot(app, partner, caseId, rfiId, { filename: secret.filename, sizeBytes: bytes.length })
  ).json();
  const signature = new URL(minted.uploadUrl).searchParams.get("signature") as string;
  const refused = await injectPut(app, minted.uploadUrl, bytes, { "content-type": "image/png" });
  expect(refused.statusCode).toBe(403);
  const put = await socketPut(base, minted.uploadUrl, bytes, {
    "content-type": "application/pdf",
    "content-length": String(bytes.length),
    "if-none-match": "*",
  });
  expect(put.status).toBe(200);

  const invalid = await answerRfi(app, partner, caseId, rfiId, {
    fields: [{ key: "nested", value: { secret: secret.value } }],
  });
  expect(invalid.statusCode).toBe(422);
  const answered = await answerRfi(app, partner, caseId, rfiId, {
    fields: [{ key: "answer", value: secret.value, label: secret.label }],
    documents: [{ uploadId: minted.uploadId, label: secret.label }],
  });
  expect(answered.statusCode).toBe(200);
  expect(
    (await app.inject({ method: "GET", url: `/cases/${caseId}/rfi/${rfiId}`, headers: partner.headers }))
      .statusCode,
  ).toBe(200);
  const doc = await app.inject({
    method: "GET",
    url: `/admin/cases/${caseId}/documents/${minted.uploadId}`,
    headers: adminHeaders,
  });
  expect(doc.statusCode).toBe(200);
  const second = await app.inject({
    method: "POST",
    url: `/admin/cases/${caseId}/rfi`,
    headers: adminHeaders,
    payload: { to: secret.to, subject: secret.subject, body: secret.body, actor: "jane" },
  });
  await app.inject({
    method: "POST",
    url: `/admin/cases/${caseId}/rfi/${second.json().rfiId}/remind`,
    headers: adminHeaders,
  });

  // The webhook deliveries of these events carry the texts: wait until each was attempted (and failed).
  const events = await ctx.db.root.selectFrom("events").select("id").where("case_id", "=", caseId).execute();
  await waitFor(
    async () => {
      const attempted = await sql<{ n: number }>`
      SELECT count(DISTINCT event_id)::int AS n FROM webhook_deliveries
      WHERE case_id = ${caseId} AND attempt_count > 0`.execute(ctx.db.root);
      return (attempted.rows[0]?.n ?? 0) >= events.length ? true : undefined;
    },
    15_000,
    "every event's first delivery attempt",
  );

  const log = lines.join("");
  expect(log).toContain("incoming request");
  expect(log).toContain("/uploads/");
  expect(log).toContain("node raise failed");
  const never: Array<[string, string]> = [...Object.entries(secret), ["signature", signature]];
  for (const [what, value] of never) {
    expect(log.includes(value), `${what} appears in the logs`).toBe(false);
  }
});
