import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { S3Config } from "../src/config.js";
import { serviceMigrations } from "../src/context.js";
import type { WorkflowDefinition } from "../src/modules/workflows/workflow.types.js";
import { type Db, openDb } from "../src/platform/db/index.js";
import { migrate } from "../src/platform/migrate.js";
import { ADMIN_TOKEN } from "./support/app.js";
import { type Child, runCommand } from "./support/children/process.js";
import { createServerDatabase, SERVER_URL } from "./support/db.js";
import { adminHeaders } from "./support/fixtures.js";
import { type ReceivedRequest, Receiver, TEST_WEBHOOK_SECRET } from "./support/receiver.js";
import { startTestS3, type TestS3 } from "./support/s3.js";
import { kycSubject } from "./support/workflows.js";

/**
 * Several hosts: two API processes and a worker, each with a data directory of its own in a
 * mount namespace of its own (a private tmpfs: nothing can pass through local disk), over one
 * PostgreSQL and one S3 server on loopback. Cases are submitted through both; their callbacks
 * and information requests are driven by the webhooks they send (as a partner's system would):
 * the callback is posted through the API that did not submit, the document is uploaded through
 * one and the answer sent through the other. Mid-load one API process and the worker are killed
 * with SIGKILL and a new worker is started. Then: every accepted case is decided once, every
 * document reads the same through both API processes, and every webhook was delivered.
 */

const CASES = 24;
/** The kill comes once this many cases are decided. */
const KILL_AFTER_DECIDED = 6;

const flow: WorkflowDefinition = {
  inputSchema: { type: "object", properties: { n: { type: "number" } } },
  start: "verify",
  nodes: [
    {
      id: "verify",
      type: "external_callback",
      webhookKey: "idv",
      payload: { n: "payload.n" },
      expiresInSeconds: 3600,
      next: "ask",
    },
    {
      id: "ask",
      type: "information_request",
      to: "'ada@example.com'",
      subject: "'Proof of address'",
      body: "'Please send a bill'",
      awaitResponse: true,
      expiresInSeconds: 3600,
      next: "approve",
      onExpired: "decline",
      onCancelled: "decline",
    },
    {
      id: "approve",
      type: "decision",
      decision: "approved",
      output: { documents: "size(nodes.ask.documents)" },
    },
    { id: "decline", type: "decision", decision: "declined", output: { why: "nodes.ask.status" } },
  ],
};

/** Whether this machine lets a process have a mount namespace with a private tmpfs; else why not. */
function mountNamespaces(): { ok: true } | { ok: false; reason: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-ns-probe-"));
  try {
    const probe = spawnSync(
      "unshare",
      [
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount -t tmpfs cds-probe "$0" && touch "$0/x"',
        dir,
      ],
      { encoding: "utf8" },
    );
    if (probe.error) return { ok: false, reason: `unshare cannot run: ${probe.error.message}` };
    if (probe.status !== 0) return { ok: false, reason: `unshare --mount failed: ${probe.stderr.trim()}` };
    // The file went to the namespace's tmpfs, not to the directory everyone else sees.
    if (fs.existsSync(path.join(dir, "x"))) return { ok: false, reason: "the tmpfs was visible outside" };
    return { ok: true };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const namespaces = mountNamespaces();
const cleanups: Array<() => Promise<void> | void> = [];
let s3: TestS3;
let bucket: S3Config;
let database: { url: string; drop(): Promise<void> };
let receiver: Receiver;

beforeAll(async () => {
  if (!SERVER_URL) return;
  database = await createServerDatabase();
  cleanups.push(() => database.drop());
  const db = await openDb({ databaseUrl: database.url });
  await migrate(db, serviceMigrations());
  await db.close();
  s3 = await startTestS3();
  cleanups.push(() => s3.close());
  bucket = await s3.createBucket();
  receiver = await Receiver.start();
  cleanups.push(() => receiver.close());
});

afterAll(async () => {
  for (const clean of cleanups.reverse()) await clean();
});

interface Host {
  child: Child;
  /** The API's base URL (API processes only). */
  url: string | undefined;
  dataDir: string;
}

/** A service process with a data directory of its own, on a private tmpfs in its own mount namespace where possible. */
async function startHost(role: "api" | "worker"): Promise<Host> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `cds-host-${role}-`));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env = {
    DATABASE_URL: database.url,
    CDS_ADMIN_TOKEN: ADMIN_TOKEN,
    CDS_DATA_DIR: dataDir,
    CDS_ROLE: role,
    PORT: "0",
    CDS_LOG_LEVEL: "info",
    CDS_JOB_LEASE_SECONDS: "2",
    CDS_JOB_POLL_MS: "100",
    CDS_ALLOW_PRIVATE_TARGETS: "true",
    CDS_BLOB_STORE: "s3",
    CDS_S3_BUCKET: bucket.bucket,
    CDS_S3_ENDPOINT: bucket.endpoint,
    CDS_S3_REGION: bucket.region,
    CDS_S3_FORCE_PATH_STYLE: "true",
  };
  const node = [process.execPath, "--import", "tsx", "src/main.ts", "serve"];
  // unshare and sh exec in turn: the process's id is the service's own, for kill -9.
  const child = namespaces.ok
    ? runCommand(
        "unshare",
        [
          "--mount",
          "--propagation",
          "private",
          "sh",
          "-c",
          'mount -t tmpfs -o size=64m cds "$CDS_DATA_DIR" && exec "$@"',
          "sh",
          ...node,
        ],
        env,
      )
    : runCommand(node[0] as string, node.slice(1), env);
  cleanups.push(() => child.kill("SIGKILL"));
  if (role === "worker") {
    await child.line(/"msg":"case decisioning service started"/, 60_000);
    return { child, url: undefined, dataDir };
  }
  const [, url] = await child.line(/"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/, 60_000);
  return { child, url, dataDir };
}

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read answers as loose JSON
  body: any;
  raw: Buffer;
}

async function call(
  base: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const raw = Buffer.from(await res.arrayBuffer());
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, raw };
}

it.skipIf(!SERVER_URL)(
  "two API processes and a worker on one PostgreSQL and one bucket lose nothing when an API process and the worker are killed",
  async () => {
    if (!namespaces.ok) {
      process.stdout.write(
        `several hosts: no private mount namespaces here (${namespaces.reason}); each process keeps a data directory of its own on the shared disk\n`,
      );
    }
    const hosts = { a: await startHost("api"), b: await startHost("api"), worker: await startHost("worker") };
    let aAlive = true;
    const A = hosts.a.url as string;
    const B = hosts.b.url as string;
    /** API process `first`, or the other one once the first is gone (a load balancer's retry). */
    async function via(first: string, fn: (base: string) => Promise<Answer>): Promise<Answer> {
      const order = first === A && !aAlive ? [B] : first === A ? [A, B] : [B, ...(aAlive ? [A] : [])];
      let last: unknown;
      for (const base of order) {
        try {
          return await fn(base);
        } catch (err) {
          last = err;
        }
      }
      throw last;
    }

    // Provisioning through A: a tenant, a key, the workflow, and both webhook configurations.
    const tenant = await call(A, "POST", "/admin/tenants", adminHeaders, { name: "Several Hosts Bank" });
    expect(tenant.status).toBe(201);
    const tenantId = tenant.body.tenantId as string;
    const key = await call(A, "POST", `/admin/tenants/${tenantId}/api-keys`, adminHeaders, {
      name: "load",
      scopes: ["cases:read", "cases:write", "cases:callback"],
    });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const partner = { "x-api-key": key.body.key as string };
    const version = await call(
      A,
      "POST",
      `/admin/tenants/${tenantId}/workflows/flow/versions`,
      adminHeaders,
      flow,
    );
    expect(version.status, JSON.stringify(version.body)).toBe(201);
    const published = await call(
      A,
      "POST",
      `/admin/tenants/${tenantId}/workflows/flow/versions/${version.body.version}/publish`,
      adminHeaders,
    );
    expect(published.status).toBe(200);
    for (const webhookKey of ["default", "idv"]) {
      const configured = await call(
        A,
        "PUT",
        `/admin/tenants/${tenantId}/webhooks/${webhookKey}`,
        adminHeaders,
        {
          url: receiver.url(`/hooks/${webhookKey}`),
          secrets: [{ id: "s1", secret: TEST_WEBHOOK_SECRET }],
          activeSecretId: "s1",
          maxAttempts: 10,
          timeoutMs: 5000,
        },
      );
      expect(configured.status, JSON.stringify(configured.body)).toBe(200);
    }

    // The partner's side, driven by the webhooks: each event acted on once, whatever its duplicates.
    const submittedThrough = new Map<string, string>();
    const documents: Array<{ caseId: string; uploadId: string; sha: string }> = [];
    const acted = new Set<string>();
    const failures: string[] = [];
    const pending = new Set<Promise<void>>();
    const act = (id: string, work: () => Promise<void>) => {
      if (acted.has(id)) return;
      acted.add(id);
      const p = work()
        .catch((err: Error) => {
          failures.push(`${id}: ${err.message}`);
        })
        .finally(() => pending.delete(p));
      pending.add(p);
    };
    const other = (caseId: string) => (submittedThrough.get(caseId) === A ? B : A);

    async function postCallback(event: Record<string, unknown>): Promise<void> {
      const caseId = event.caseId as string;
      const callbackPath = new URL(event.callbackUrl as string).pathname;
      const res = await via(other(caseId), (base) =>
        call(base, "POST", callbackPath, partner, { result: "clear" }),
      );
      // 409: an earlier try was recorded though its answer was lost with a killed process.
      if (res.status !== 202 && res.status !== 409)
        throw new Error(`callback answered ${res.status}: ${JSON.stringify(res.body)}`);
    }

    async function answerWithDocument(event: Record<string, unknown>): Promise<void> {
      const caseId = event.case_id as string;
      const rfiId = event.rfi_id as string;
      const bytes = Buffer.from(`%PDF-1.7 proof of address for ${caseId} ${"x".repeat(2000)}`);
      // Uploaded through A (while it lives), answered through B.
      const minted = await via(A, (base) =>
        call(base, "POST", `/cases/${caseId}/rfi/${rfiId}/documents`, partner, {
          filename: "bill.pdf",
          contentType: "application/pdf",
          sizeBytes: bytes.length,
        }),
      );
      if (minted.status !== 201)
        throw new Error(`minting answered ${minted.status}: ${JSON.stringify(minted.body)}`);
      const put = await fetch(minted.body.uploadUrl, {
        method: "PUT",
        headers: { "content-type": "application/pdf", "if-none-match": "*" },
        body: bytes,
      });
      if (put.status !== 200) throw new Error(`the upload answered ${put.status}: ${await put.text()}`);
      documents.push({ caseId, uploadId: minted.body.uploadId, sha: sha(bytes) });
      const answered = await via(B, (base) =>
        call(base, "POST", `/cases/${caseId}/rfi/${rfiId}/response`, partner, {
          fields: [{ key: "channel", value: "upload" }],
          documents: [{ uploadId: minted.body.uploadId, label: "bill" }],
        }),
      );
      if (
        answered.status !== 200 &&
        !(answered.status === 409 && answered.body?.error === "already_answered")
      )
        throw new Error(`answering answered ${answered.status}: ${JSON.stringify(answered.body)}`);
    }

    const decided = new Set<string>();
    const onEvent = (request: ReceivedRequest) => {
      const event = request.json();
      if (event.event_type === "external_callback.dispatch")
        act(`cb:${event.caseId}`, () => postCallback(event));
      if (event.event_type === "case.rfi_requested")
        act(`rfi:${event.rfi_id}`, () => answerWithDocument(event));
      if (event.event_type === "case.decided") decided.add(event.case_id ?? event.caseId);
      return {};
    };
    receiver.on("/hooks/default", onEvent).on("/hooks/idv", onEvent);

    // Submissions through both API processes, four at a time, each with its idempotency key: a
    // retry through the other process after a lost answer (A killed) finds the case A created.
    const accepted: string[] = [];
    let retriedToExisting = 0;
    let next = 0;
    const submitter = async () => {
      while (next < CASES) {
        const i = next++;
        const first = i % 2 === 0 ? A : B;
        let through = first;
        const res = await via(first, (base) => {
          through = base;
          return call(base, "POST", "/cases", partner, {
            workflowId: "flow",
            type: "KYC",
            payload: { n: i },
            subject: kycSubject,
            idempotencyKey: `load-${i}`,
          });
        }).catch((err: Error) => ({ status: 0, body: { error: err.message }, raw: Buffer.alloc(0) }));
        if (res.status === 201 || res.status === 200) {
          if (res.status === 200) retriedToExisting++;
          accepted.push(res.body.caseId);
          submittedThrough.set(res.body.caseId, through);
        }
        // Keep the load going while the kill lands.
        await receiver.waitUntil(() => decided.size >= Math.min(i - 4, KILL_AFTER_DECIDED) || !aAlive, {
          timeoutMs: 60_000,
          what: "progress",
        });
      }
    };
    const submitting = Promise.all([submitter(), submitter(), submitter(), submitter()]);

    await receiver.waitUntil(() => decided.size >= KILL_AFTER_DECIDED, {
      timeoutMs: 90_000,
      what: "first decisions",
    });
    aAlive = false;
    hosts.a.child.kill("SIGKILL");
    hosts.worker.child.kill("SIGKILL");
    expect(await hosts.a.child.exited).toBe("SIGKILL");
    expect(await hosts.worker.child.exited).toBe("SIGKILL");
    const decidedAtKill = decided.size;
    hosts.worker = await startHost("worker");
    await submitting;
    expect(decidedAtKill).toBeLessThan(CASES);

    // Wait until every case of the tenant (also one whose 201 was lost with A) is decided.
    const db: Db = await openDb({ databaseUrl: database.url });
    cleanups.push(() => db.close());
    const unsettled = async () =>
      db.root
        .selectFrom("cases")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where("tenant_id", "=", tenantId)
        .where("status", "!=", "decided")
        .executeTakeFirstOrThrow();
    const deadline = Date.now() + 120_000;
    while (Number((await unsettled()).n) > 0 || pending.size > 0) {
      if (Date.now() > deadline)
        throw new Error(`cases still open: ${JSON.stringify(await unsettled())}; ${failures}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(failures).toEqual([]);

    // Every accepted case decided, once.
    const cases = await db.root
      .selectFrom("cases")
      .select(["id", "status", "decision_history", "payload"])
      .where("tenant_id", "=", tenantId)
      .execute();
    expect(accepted.length).toBeGreaterThan(CASES / 2);
    // No submission made two cases, whichever process its retry reached.
    const submissions = cases.map((c) => (c.payload as { n: number }).n);
    expect(new Set(submissions).size).toBe(cases.length);
    expect(new Set(accepted).size).toBe(accepted.length);
    const byId = new Map(cases.map((c) => [c.id, c]));
    for (const id of accepted) expect(byId.get(id)?.status, id).toBe("decided");
    for (const c of cases) {
      expect(
        c.decision_history.map((d) => d.value),
        c.id,
      ).toEqual(["approved"]);
    }
    const decidedEvents = await db.root
      .selectFrom("events")
      .select(["case_id"])
      .where("tenant_id", "=", tenantId)
      .where("event_type", "=", "case.decided")
      .execute();
    expect(decidedEvents.map((e) => e.case_id).sort()).toEqual(cases.map((c) => c.id).sort());

    // Every uploaded document, through both API processes: B, and A's successor on a fresh host.
    const a2 = await startHost("api");
    expect(documents.length).toBeGreaterThanOrEqual(cases.length);
    for (const base of [B, a2.url as string]) {
      for (const doc of documents) {
        const read = await call(
          base,
          "GET",
          `/admin/cases/${doc.caseId}/documents/${doc.uploadId}`,
          adminHeaders,
        );
        expect(read.status, `${base} ${doc.uploadId}`).toBe(200);
        expect(sha(read.raw)).toBe(doc.sha);
      }
    }
    // Without namespaces to hide them, the data directories are seen to stay empty.
    if (!namespaces.ok)
      for (const host of [hosts.a, hosts.b, a2]) expect(fs.readdirSync(host.dataDir)).toEqual([]);

    // Every webhook delivered: each delivery succeeded and reached the receiver (at least once).
    const deliveries = await db.root
      .selectFrom("webhook_deliveries")
      .select(["webhook_id", "status"])
      .where("tenant_id", "=", tenantId)
      .execute();
    expect(deliveries.length).toBeGreaterThanOrEqual(cases.length * 4);
    const stillOpen = async () =>
      db.root
        .selectFrom("webhook_deliveries")
        .select("webhook_id")
        .where("tenant_id", "=", tenantId)
        .where("status", "!=", "succeeded")
        .execute();
    const webhookDeadline = Date.now() + 60_000;
    while ((await stillOpen()).length > 0) {
      if (Date.now() > webhookDeadline)
        throw new Error(`deliveries not succeeded: ${JSON.stringify(await stillOpen())}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const received = new Set(receiver.requests.map((r) => r.json().webhookId as string));
    const all = await db.root
      .selectFrom("webhook_deliveries")
      .select("webhook_id")
      .where("tenant_id", "=", tenantId)
      .execute();
    expect(all.filter((d) => !received.has(d.webhook_id))).toEqual([]);
    process.stdout.write(
      `several hosts: ${cases.length} cases (${accepted.length} answered, ${retriedToExisting} of them by a retry finding the case), ${documents.length} documents, ${all.length} webhooks, killed at ${decidedAtKill} decided, mount namespaces: ${namespaces.ok}\n`,
    );
    for (const host of [hosts.b, hosts.worker, a2]) {
      host.child.kill("SIGTERM");
      await host.child.exited;
    }
  },
  300_000,
);

function sha(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
