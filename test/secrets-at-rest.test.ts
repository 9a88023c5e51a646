import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { verifyWebhook } from "@case-decisioning/verify-webhook";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { sealStoredWebhookSecrets } from "../src/modules/webhooks/index.js";
import { openSecrets } from "../src/modules/webhooks/webhook-secrets.js";
import { SIGNING_KEY_NAME, signTarget } from "../src/platform/blobs/upload-signature.js";
import {
  createSecretBox,
  ensureStoredSecretKey,
  parseSecretKey,
  SecretBoxError,
  secretBoxOf,
} from "../src/platform/secret-box.js";
import { startWorker } from "../src/worker.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { createStoredCase, createTenant } from "./support/fixtures.js";
import { emitDecided, Receiver, TEST_WEBHOOK_SECRET } from "./support/receiver.js";
import { injectPut, mintSlot, openRequest } from "./support/rfi.js";

const KEY_HEX = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

describe("the secret box", () => {
  it("seals so that only the same key and purpose open it", () => {
    const box = createSecretBox(parseSecretKey(KEY_HEX));
    const sealed = box.seal("s3cret-value", "provider:t1:sumsub");
    expect(sealed).not.toContain("s3cret-value");
    expect(sealed).not.toBe(box.seal("s3cret-value", "provider:t1:sumsub"));
    expect(box.open(sealed, "provider:t1:sumsub")).toBe("s3cret-value");
    expect(() => box.open(sealed, "provider:t2:sumsub")).toThrow(SecretBoxError);
    const other = createSecretBox(parseSecretKey("ff".repeat(32)));
    expect(() => other.open(sealed, "provider:t1:sumsub")).toThrow(/another key/);
    const tampered = `${sealed.slice(0, -3)}${sealed.endsWith("A") ? "BBB" : "AAA"}`;
    expect(() => box.open(tampered, "provider:t1:sumsub")).toThrow(SecretBoxError);
  });

  it("reads CDS_SECRET_KEY as hex or base64 and refuses anything but 32 bytes", () => {
    expect(parseSecretKey(KEY_HEX)).toHaveLength(32);
    expect(parseSecretKey(Buffer.from(KEY_HEX, "hex").toString("base64"))).toEqual(
      Buffer.from(KEY_HEX, "hex"),
    );
    expect(() => parseSecretKey("too-short")).toThrow(/32 bytes/);
    expect(loadConfig({ CDS_SECRET_KEY: KEY_HEX }).secretKey).toBe(KEY_HEX);
    expect(() => loadConfig({ CDS_SECRET_KEY: "abc" })).toThrow(ConfigError);
  });

  it("is required with DATABASE_URL", () => {
    const env = { DATABASE_URL: "postgres://db/cds", CDS_ADMIN_TOKEN: "an-operator-token-of-some-length" };
    expect(() => loadConfig(env)).toThrow(/CDS_SECRET_KEY: is required when DATABASE_URL is set/);
    expect(loadConfig({ ...env, CDS_SECRET_KEY: KEY_HEX }).secretKey).toBe(KEY_HEX);
  });

  it("in embedded mode is generated once and kept in the data directory", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-key-"));
    try {
      const first = ensureStoredSecretKey(dir);
      const again = ensureStoredSecretKey(dir);
      expect(first.created).toBe(true);
      expect(again.created).toBe(false);
      expect(again.key).toEqual(first.key);
      expect(fs.statSync(first.file).mode & 0o777).toBe(0o600);
      const box = secretBoxOf(loadConfig({ CDS_DATA_DIR: dir }));
      expect(createSecretBox(first.key).open(box.seal("x", "p"), "p")).toBe("x");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("webhook signing secrets stored before sealing", () => {
  let h: TestApp;
  beforeAll(async () => {
    h = await createTestApp();
  });
  afterAll(async () => {
    await h.close();
  });

  it("are sealed at the next start, once, and still sign deliveries", async () => {
    const receiver = await Receiver.start();
    try {
      const tenantId = await createTenant(h.app);
      // A row as the service stored it before secrets were sealed.
      await h.ctx.db.root
        .insertInto("webhook_configs")
        .values({
          tenant_id: tenantId,
          webhook_key: "default",
          url: receiver.url("/hook"),
          secrets: JSON.stringify([{ id: "s1", secret: TEST_WEBHOOK_SECRET }]),
          active_secret_id: "s1",
          secrets_sealed: false,
          max_attempts: 5,
          timeout_ms: 5000,
        })
        .execute();
      const box = secretBoxOf(h.ctx.config);
      expect(await sealStoredWebhookSecrets(h.ctx.db, box)).toBeGreaterThanOrEqual(1);
      expect(await sealStoredWebhookSecrets(h.ctx.db, box)).toBe(0);
      const row = await h.ctx.db.root
        .selectFrom("webhook_configs")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .executeTakeFirstOrThrow();
      expect(row.secrets_sealed).toBe(true);
      expect(JSON.stringify(row.secrets)).not.toContain(TEST_WEBHOOK_SECRET);
      expect(openSecrets(box, tenantId, "default", row.secrets, true)).toEqual([
        { id: "s1", secret: TEST_WEBHOOK_SECRET },
      ]);

      const caseId = await createStoredCase(h.ctx, tenantId);
      const worker = await startWorker(h.ctx);
      try {
        await emitDecided(h.ctx.db, tenantId, caseId);
        const [received] = await receiver.waitFor(1, { path: "/hook" });
        if (!received) throw new Error("no delivery");
        expect(
          verifyWebhook({
            body: received.body,
            headers: received.headers,
            secrets: { s1: TEST_WEBHOOK_SECRET },
          }),
        ).toBe(true);
      } finally {
        await worker.stop();
      }
    } finally {
      await receiver.close();
    }
  });
});

describe("the upload URL signing key stored before sealing", () => {
  let h: TestApp;
  beforeAll(async () => {
    h = await createTestApp();
  });
  afterAll(async () => {
    await h.close();
  });

  it("is sealed when first read, and URLs signed with it still upload", async () => {
    const plain = randomBytes(32).toString("base64url");
    // The row as the service stored it before the key was sealed.
    await h.ctx.db.root
      .insertInto("service_secrets")
      .values({ name: SIGNING_KEY_NAME, value: plain })
      .execute();
    const { partner, caseId, rfiId } = await openRequest(h.app, h.ctx);
    const bytes = Buffer.from("%PDF-");
    const minted = await mintSlot(h.app, partner, caseId, rfiId, { sizeBytes: bytes.length });
    expect(minted.statusCode, minted.body).toBe(201);
    const row = await h.ctx.db.root
      .selectFrom("service_secrets")
      .select("value")
      .where("name", "=", SIGNING_KEY_NAME)
      .executeTakeFirstOrThrow();
    expect(row.value).not.toContain(plain);
    expect(row.value.startsWith(`v1.${secretBoxOf(h.ctx.config).keyId}.`)).toBe(true);
    // The URL is signed with the key as it was: the upload goes through.
    const url = new URL(minted.json().uploadUrl);
    const signed = signTarget(Buffer.from(plain, "base64url"), {
      key: url.pathname.replace(/^\/uploads\//, ""),
      contentType: "application/pdf",
      sizeBytes: bytes.length,
      expiresAt: new Date(Number(url.searchParams.get("expires")) * 1000),
    });
    expect(url.searchParams.get("signature")).toBe(signed);
    expect((await injectPut(h.app, minted.json().uploadUrl, bytes)).statusCode).toBe(200);
  });
});
