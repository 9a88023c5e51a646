import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emitEvent, emitEvents, type NewEvent } from "../src/modules/webhooks/events.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createStoredCase, createTenant } from "./support/fixtures.js";
import { configureWebhook } from "./support/receiver.js";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(async () => {
  await h.close();
});

async function newCase(): Promise<{ tenantId: string; caseId: string }> {
  const tenantId = await createTenant(h.app);
  return { tenantId, caseId: await createStoredCase(h.ctx, tenantId) };
}

function rfiRequested(tenantId: string, caseId: string, webhookKey: string | null): NewEvent {
  return {
    tenantId,
    caseId,
    type: "case.rfi_requested",
    webhookKey,
    dryRun: false,
    payload: {
      event_type: "case.rfi_requested",
      tenant_id: tenantId,
      case_id: caseId,
      rfi_id: "0b6f7c1e-2f43-4f0e-9a51-8d2f3c4b5a69",
      case_type: "KYC",
      to: "ada@example.com",
      subject: "Proof of address",
      body: "Please upload a recent utility bill.",
      requested_by: "analyst:u-17",
      source: "analyst",
      ...(webhookKey ? { webhook_key: webhookKey } : {}),
      timestamp: "2025-03-01T10:00:00.000Z",
    },
  };
}

async function rowsOf(caseId: string) {
  const events = await h.ctx.db.root.selectFrom("events").selectAll().where("case_id", "=", caseId).execute();
  const deliveries = await h.ctx.db.root
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("case_id", "=", caseId)
    .execute();
  // The delivery is its own queue entry: no job names it.
  const jobs = await h.ctx.db.root
    .selectFrom("jobs")
    .select("id")
    .where(sql<boolean>`payload::text LIKE ${`%${deliveries[0]?.id ?? "none"}%`}`)
    .execute();
  return { events, deliveries, jobs };
}

describe("emitEvent", () => {
  it("writes the event and its delivery, due at once with the body serialized once and no job, when the transaction commits", async () => {
    const { tenantId, caseId } = await newCase();
    await configureWebhook(h.app, adminHeaders, tenantId, { url: "https://hooks.example.test/rfi" }, "rfi");
    const event = rfiRequested(tenantId, caseId, "rfi");
    const eventId = await h.ctx.db.transaction((tx) => emitEvent(tx, event));
    const { events, deliveries, jobs } = await rowsOf(caseId);
    expect(events).toEqual([
      expect.objectContaining({
        id: eventId,
        tenant_id: tenantId,
        event_type: "case.rfi_requested",
        webhook_key: "rfi",
      }),
    ]);
    expect(events[0]?.payload).toEqual(event.payload);
    // Both ids begin with the time they were made (decision 0033); the webhookId is random.
    const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(eventId).toMatch(v7);
    expect(deliveries[0]?.id).toMatch(v7);
    expect(deliveries[0]?.webhook_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
    const [delivery] = deliveries;
    expect(delivery).toMatchObject({
      event_id: eventId,
      webhook_key: "rfi",
      status: "pending",
      attempt_count: 0,
    });
    expect(delivery?.body).toBe(JSON.stringify({ webhookId: delivery?.webhook_id, ...event.payload }));
    expect(delivery?.claims).toBe(0);
    expect(delivery?.next_attempt_at?.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(jobs).toEqual([]);
  });

  it("records the event of a dry run and gives it no delivery, from the flag the event carries", async () => {
    const { tenantId, caseId } = await newCase();
    await configureWebhook(h.app, adminHeaders, tenantId, { url: "https://hooks.example.test/rfi" }, "rfi");
    await h.ctx.db.transaction((tx) =>
      emitEvents(tx, [
        { ...rfiRequested(tenantId, caseId, "rfi"), dryRun: true },
        rfiRequested(tenantId, caseId, "rfi"),
      ]),
    );
    const { events, deliveries } = await rowsOf(caseId);
    expect(events).toHaveLength(2);
    // The stored case is no dry run: only the flag decided.
    expect(deliveries).toHaveLength(1);
    await h.ctx.db.transaction((tx) =>
      emitEvent(tx, { ...rfiRequested(tenantId, caseId, "rfi"), dryRun: true }),
    );
    expect((await rowsOf(caseId)).events).toHaveLength(3);
    expect((await rowsOf(caseId)).deliveries).toHaveLength(1);
  });

  it("writes a delivered event once, in its delivery, and a dry run's in recorded_events; the events view shows each once", async () => {
    const { tenantId, caseId } = await newCase();
    await configureWebhook(h.app, adminHeaders, tenantId, { url: "https://hooks.example.test/rfi" }, "rfi");
    const [deliveredId, dryRunId] = await h.ctx.db.transaction((tx) =>
      emitEvents(tx, [
        rfiRequested(tenantId, caseId, "rfi"),
        { ...rfiRequested(tenantId, caseId, "rfi"), dryRun: true },
      ]),
    );
    const recorded = await h.ctx.db.root
      .selectFrom("recorded_events")
      .select("id")
      .where("case_id", "=", caseId)
      .execute();
    expect(recorded.map((r) => r.id)).toEqual([dryRunId]);
    // A redelivery is the same event: the view still shows it once.
    const [delivery] = (await rowsOf(caseId)).deliveries;
    const res = await h.app.inject({
      method: "POST",
      url: `/admin/webhook-deliveries/${delivery?.id}/redeliver`,
      headers: adminHeaders,
    });
    expect(res.statusCode, res.body).toBe(202);
    const { events, deliveries } = await rowsOf(caseId);
    expect(deliveries).toHaveLength(2);
    expect(events.map((e) => e.id).sort()).toEqual([deliveredId, dryRunId].sort());
    // A process of the previous build still inserts into `events`, with a delivery beside it: its
    // event lands in the table and the view shows it once.
    const oldId = "0190a8e4-0000-7000-8000-000000000001";
    await sql`INSERT INTO events (id, tenant_id, case_id, event_type, webhook_key, payload)
              VALUES (${oldId}::uuid, ${tenantId}::uuid, ${caseId}::uuid, 'case.rfi_requested', NULL, '{"a":1}'::jsonb)`.execute(
      h.ctx.db.root,
    );
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, event_id, case_id, event_type, webhook_key, webhook_id, body, status, completed_at)
              VALUES (${"0190a8e4-0000-7000-8000-000000000002"}::uuid, ${tenantId}::uuid, ${oldId}::uuid, ${caseId}::uuid,
                      'case.rfi_requested', 'default', ${"0b6f7c1e-2f43-4f0e-9a51-8d2f3c4b5a70"}::uuid, '{"webhookId":"x","a":1}', 'failed', now())`.execute(
      h.ctx.db.root,
    );
    const old = (await rowsOf(caseId)).events.filter((e) => e.id === oldId);
    expect(old).toEqual([
      expect.objectContaining({ event_type: "case.rfi_requested", webhook_key: null, payload: { a: 1 } }),
    ]);
  });

  it("records an event whose configuration does not exist as a failed delivery naming it, with no job", async () => {
    const { tenantId, caseId } = await newCase();
    await h.ctx.db.transaction((tx) => emitEvent(tx, rfiRequested(tenantId, caseId, "nowhere")));
    const { events, deliveries, jobs } = await rowsOf(caseId);
    expect(events).toHaveLength(1);
    expect(deliveries).toEqual([
      expect.objectContaining({
        webhook_key: "nowhere",
        status: "failed",
        attempt_count: 0,
        last_error: 'no webhook configuration "nowhere" exists for this tenant',
        next_attempt_at: null,
      }),
    ]);
    expect(deliveries[0]?.completed_at).toBeInstanceOf(Date);
    expect(jobs).toEqual([]);
  });

  it("routes an event without a webhook key to the default configuration", async () => {
    const { tenantId, caseId } = await newCase();
    await h.ctx.db.transaction((tx) => emitEvent(tx, rfiRequested(tenantId, caseId, null)));
    const { events, deliveries } = await rowsOf(caseId);
    expect(events[0]?.webhook_key).toBeNull();
    expect(deliveries[0]?.webhook_key).toBe("default");
  });

  it("leaves no event or delivery behind when the transaction rolls back", async () => {
    const { tenantId, caseId } = await newCase();
    await expect(
      h.ctx.db.transaction(async (tx) => {
        await emitEvent(tx, rfiRequested(tenantId, caseId, null));
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    const { events, deliveries } = await rowsOf(caseId);
    expect(events).toEqual([]);
    expect(deliveries).toEqual([]);
  });

  it("gives every event its own webhookId, first in the body, whatever the payload carries", async () => {
    const { tenantId, caseId } = await newCase();
    const event = rfiRequested(tenantId, caseId, null);
    await h.ctx.db.transaction(async (tx) => {
      await emitEvent(tx, event);
      await emitEvent(tx, { ...event, payload: { webhookId: "caller-chosen", ...event.payload } });
    });
    const { deliveries } = await rowsOf(caseId);
    expect(deliveries).toHaveLength(2);
    const ids = deliveries.map((d) => JSON.parse(d.body).webhookId);
    expect(ids).toEqual(deliveries.map((d) => d.webhook_id));
    expect(new Set(ids).size).toBe(2);
    expect(ids).not.toContain("caller-chosen");
    for (const d of deliveries) expect(Object.keys(JSON.parse(d.body))[0]).toBe("webhookId");
  });
});
