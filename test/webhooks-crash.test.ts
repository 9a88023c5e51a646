import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { verifyWebhook } from "@case-decisioning/verify-webhook";
import { afterAll, expect, it } from "vitest";
import { serviceMigrations } from "../src/context.js";
import { insertTenant } from "../src/modules/tenants/tenants.repo.js";
import { emitEvent } from "../src/modules/webhooks/events.js";
import { upsertWebhookConfig } from "../src/modules/webhooks/webhook-configs.repo.js";
import { uuid } from "../src/platform/crypto.js";
import { type Db, openDb } from "../src/platform/db/index.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN } from "./support/app.js";
import { type Child, runTs } from "./support/children/process.js";
import { createServerDatabase, SERVER_URL } from "./support/db.js";
import { createStoredCase } from "./support/fixtures.js";
import { type ReceivedRequest, Receiver, TEST_WEBHOOK_SECRET } from "./support/receiver.js";

const EVENTS = 5000;
/** The delivering process is killed each time this many more requests have arrived. */
const KILL_EVERY = 1000;

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const clean of cleanups.reverse()) await clean();
});

/** The database the children deliver from: a data directory of its own, or a server database. */
async function database(): Promise<{ open(): Promise<Db>; env: Record<string, string> }> {
  if (SERVER_URL) {
    const server = await createServerDatabase();
    cleanups.push(() => server.drop());
    return { open: () => openDb({ databaseUrl: server.url }), env: { DATABASE_URL: server.url } };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-crash-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return { open: () => openDb({ dataDir: dir }), env: { CDS_DATA_DIR: dir } };
}

/** A tenant with a webhook configuration to `url`, and a case of it. */
async function configured(
  db: Db,
  url: string,
  timeoutMs = 5000,
): Promise<{ tenantId: string; caseId: string }> {
  await migrate(db, serviceMigrations());
  const tenantId = uuid();
  await insertTenant(db.root, tenantId, "Crash Bank");
  await upsertWebhookConfig(db.root, tenantId, "default", {
    url,
    secrets: [{ id: "s1", secret: TEST_WEBHOOK_SECRET }],
    // Written as a service before secrets were sealed stored it: the deliverers read either form.
    secretsSealed: false,
    activeSecretId: "s1",
    maxAttempts: 10,
    timeoutMs,
  });
  const caseId = await createStoredCase({ db }, tenantId, "running");
  return { tenantId, caseId };
}

async function seed(db: Db, url: string): Promise<{ expected: Map<number, string> }> {
  const { tenantId, caseId } = await configured(db, url);
  for (let batch = 0; batch < EVENTS / 500; batch++) {
    await db.transaction(async (tx) => {
      for (let i = batch * 500; i < (batch + 1) * 500; i++) {
        await emitEvent(tx, {
          tenantId,
          caseId,
          type: "node.notification",
          webhookKey: null,
          dryRun: false,
          payload: {
            event_type: "node.notification",
            tenantId,
            caseId,
            nodeId: "notify_progress",
            webhookKey: null,
            output: { sequence: i },
          },
        });
      }
    });
  }
  const rows = await db.root.selectFrom("webhook_deliveries").select(["body", "webhook_id"]).execute();
  const expected = new Map(rows.map((r) => [JSON.parse(r.body).output.sequence as number, r.webhook_id]));
  return { expected };
}

const sequenceOf = (r: ReceivedRequest): number => r.json().output.sequence;

/** The environment of a delivering child over `store`. */
const childEnv = (store: { env: Record<string, string> }) => ({
  ...store.env,
  CDS_ADMIN_TOKEN: ADMIN_TOKEN,
  CDS_LOG_LEVEL: "silent",
  CDS_JOB_LEASE_SECONDS: "1",
  CDS_JOB_POLL_MS: "100",
  CDS_ALLOW_PRIVATE_TARGETS: "true",
});

/*
 * A delivery the inserting process's worker took at its insert has no claim row: its first attempt
 * is counted by the lease written with it. The process is killed while those attempts are open
 * (the receiver never answers them); another process delivers the events afterwards, once the
 * lease has run out, each with its webhookId, logging the first attempt as interrupted.
 */
it("delivers the deliveries handed to a process killed while sending them, their first attempt logged as interrupted", async () => {
  const receiver = await Receiver.start();
  cleanups.push(() => receiver.close());
  receiver.on("/handed", { stall: true });
  const store = await database();
  let db = await store.open();
  const { tenantId, caseId } = await configured(db, receiver.url("/handed"), 30_000);
  await db.close();

  const count = 3;
  const env = childEnv(store);
  let child = runTs("test/support/children/webhooks-deliverer.ts", [tenantId, caseId, String(count)], env);
  cleanups.push(() => child.kill("SIGKILL"));
  const [, handed, claims] = await child.line(/^emitted (\d+) (\d+)$/, 30_000);
  expect([Number(handed), Number(claims)]).toEqual([count, 0]);
  await receiver.waitFor(count, { path: "/handed" });
  expect(receiver.open("/handed")).toBe(count);
  child.kill("SIGKILL");
  expect(await child.exited).toBe("SIGKILL");

  receiver.on("/handed", { status: 204 });
  child = runTs("test/support/children/webhooks-deliverer.ts", [], env);
  await child.line(/^ready/, 180_000);
  const [, succeeded, failed] = await child.line(/^settled (\d+) (\d+)$/, 60_000);
  expect([Number(succeeded), Number(failed)]).toEqual([count, 0]);
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);

  const requests = receiver.received("/handed");
  expect(requests).toHaveLength(count * 2);
  const ids = new Map<number, Set<string>>();
  for (const r of requests) {
    const body = r.json();
    ids.set(body.output.i, (ids.get(body.output.i) ?? new Set()).add(body.webhookId));
  }
  expect([...ids.values()].map((s) => s.size)).toEqual(Array(count).fill(1));

  db = await store.open();
  const rows = await db.root
    .selectFrom("webhook_deliveries as d")
    .leftJoin("webhook_attempts as a", "a.delivery_id", "d.id")
    .select(["d.status", "d.attempt_count", "a.attempt", "a.error"])
    .where("d.tenant_id", "=", tenantId)
    .execute();
  await db.close();
  expect(rows).toHaveLength(count);
  for (const row of rows) {
    expect(row).toMatchObject({ status: "succeeded", attempt_count: 2, attempt: 1 });
    expect(row.error).toMatch(/^interrupted/);
  }
}, 120_000);

it("delivers each of 5,000 events at least once while the delivering process is killed with SIGKILL, a duplicate keeping its webhookId", async () => {
  const receiver = await Receiver.start();
  cleanups.push(() => receiver.close());
  // A little latency keeps attempts in flight when the kill comes, so some are cut short.
  receiver.on("/crash", { delayMs: 15 });
  const store = await database();
  const db = await store.open();
  const { expected } = await seed(db, receiver.url("/crash"));
  expect(expected.size).toBe(EVENTS);
  // The embedded database can be open in one process only; a server database stays open here.
  await db.close();

  const env = childEnv(store);
  // The events received so far, read once per request (the receiver's checks run on each).
  const seen = new Set<number>();
  let read = 0;
  const distinct = () => {
    for (; read < receiver.requests.length; read++)
      seen.add(sequenceOf(receiver.requests[read] as ReceivedRequest));
    return seen.size;
  };
  let kills = 0;
  let child: Child | undefined;
  cleanups.push(() => child?.kill("SIGKILL"));
  while (distinct() < EVENTS - KILL_EVERY / 2) {
    child = runTs("test/support/children/webhooks-deliverer.ts", [], env);
    await child.line(/^ready/, 180_000);
    const target = receiver.requests.length + KILL_EVERY;
    await receiver.waitUntil(() => receiver.requests.length >= target || distinct() === EVENTS, {
      timeoutMs: 60_000,
    });
    child.kill("SIGKILL");
    expect(await child.exited).toBe("SIGKILL");
    kills++;
  }

  child = runTs("test/support/children/webhooks-deliverer.ts", [], env);
  await child.line(/^ready/, 180_000);
  await receiver.waitUntil(() => distinct() === EVENTS, { timeoutMs: 120_000, what: "every event" });
  const [, succeeded, failed] = await child.line(/^settled (\d+) (\d+)$/, 60_000);
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);

  expect(kills).toBeGreaterThanOrEqual(3);
  for (const request of receiver.requests) {
    const body = request.json();
    expect(body.webhookId).toBe(expected.get(body.output.sequence));
    expect(
      verifyWebhook({ body: request.body, headers: request.headers, secrets: { s1: TEST_WEBHOOK_SECRET } }),
    ).toBe(true);
  }
  expect(distinct()).toBe(EVENTS);
  // One webhookId per event, however often it arrived: no event was emitted as two deliveries.
  const ids = new Map<number, Set<string>>();
  for (const request of receiver.requests) {
    const body = request.json();
    ids.set(body.output.sequence, (ids.get(body.output.sequence) ?? new Set()).add(body.webhookId));
  }
  expect([...ids.values()].filter((s) => s.size !== 1)).toEqual([]);

  expect([Number(succeeded), Number(failed)]).toEqual([EVENTS, 0]);
  const duplicates = receiver.requests.length - EVENTS;
  process.stdout.write(`crash test: ${kills} kills, ${duplicates} duplicate deliveries\n`);
}, 400_000);
