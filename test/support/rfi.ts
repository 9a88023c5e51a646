import http from "node:http";
import type { AddressInfo } from "node:net";
import type { App } from "../../src/platform/app-types.js";
import type { AppContext } from "../../src/platform/context.js";
import { createPartner, createStoredCase, type Partner } from "./fixtures.js";

/** Helpers of the information-request tests: raise, mint, upload, answer, read the outbox. */

export const PDF = "application/pdf";

export async function raiseRfi(
  app: App,
  partner: Partner,
  caseId: string,
  body: Record<string, unknown> = {},
): Promise<{ rfiId: string } & Record<string, unknown>> {
  const res = await app.inject({
    method: "POST",
    url: `/cases/${caseId}/rfi`,
    headers: partner.headers,
    payload: { to: "ada@example.com", subject: "Proof of address", body: "Please send a bill.", ...body },
  });
  if (res.statusCode !== 201) throw new Error(`raising an RFI answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** A pending information request on a case of the partner's own. */
export interface OpenRequest {
  partner: Partner;
  caseId: string;
  rfiId: string;
}

/** Raises a request on a new stored case, for `partner` or else a new partner with every scope. */
export async function openRequest(app: App, ctx: AppContext, partner?: Partner): Promise<OpenRequest> {
  const p = partner ?? (await createPartner(app));
  const caseId = await createStoredCase(ctx, p.tenantId);
  const { rfiId } = await raiseRfi(app, p, caseId);
  return { partner: p, caseId, rfiId };
}

export function mintSlot(
  app: App,
  partner: Partner,
  caseId: string,
  rfiId: string,
  body: Record<string, unknown> = {},
) {
  return app.inject({
    method: "POST",
    url: `/cases/${caseId}/rfi/${rfiId}/documents`,
    headers: partner.headers,
    payload: { filename: "statement.pdf", contentType: PDF, sizeBytes: 5, ...body },
  });
}

export function answerRfi(app: App, partner: Partner, caseId: string, rfiId: string, payload: unknown) {
  return app.inject({
    method: "POST",
    url: `/cases/${caseId}/rfi/${rfiId}/response`,
    headers: { ...partner.headers, "content-type": "application/json" },
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });
}

/** The path and query of an upload URL, for `app.inject`. */
export function pathOf(uploadUrl: string): string {
  const url = new URL(uploadUrl);
  return `${url.pathname}${url.search}`;
}

/** An upload's answer, from the service's own upload route or from an S3 server. */
export interface PutResponse {
  statusCode: number;
  body: string;
}

/**
 * PUTs with the three pinned headers, overridable one by one: through `app.inject` when the URL
 * is the service's own (the disk store), else over a socket to the URL (an S3 bucket).
 */
export async function injectPut(
  app: App,
  uploadUrl: string,
  body: Buffer,
  headers: Record<string, string | undefined> = {},
): Promise<PutResponse> {
  const all: Record<string, string> = {};
  const given = {
    "content-type": PDF,
    "content-length": String(body.length),
    "if-none-match": "*",
    ...headers,
  };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) all[k] = v;
  if (!new URL(uploadUrl).pathname.startsWith("/uploads/")) {
    const res = await socketPut(new URL(uploadUrl).origin, uploadUrl, body, all);
    return { statusCode: res.status, body: res.body };
  }
  const res = await app.inject({ method: "PUT", url: pathOf(uploadUrl), headers: all, payload: body });
  return { statusCode: res.statusCode, body: res.body };
}

/** The error code of a refused upload: the service's `error`, or an S3 server's `<Code>`. */
export function uploadErrorOf(res: PutResponse): string | undefined {
  const xml = /<Code>([^<]*)<\/Code>/.exec(res.body);
  if (xml) return xml[1];
  try {
    return (JSON.parse(res.body) as { error?: string }).error;
  } catch {
    return undefined;
  }
}

/** Mints a slot for `bytes` and uploads them; returns the uploadId. */
export async function uploadDocument(
  app: App,
  partner: Partner,
  caseId: string,
  rfiId: string,
  bytes: Buffer = Buffer.from("%PDF-"),
  contentType = PDF,
): Promise<string> {
  const minted = await mintSlot(app, partner, caseId, rfiId, { sizeBytes: bytes.length, contentType });
  if (minted.statusCode !== 201) throw new Error(`minting answered ${minted.statusCode}: ${minted.body}`);
  const { uploadId, uploadUrl } = minted.json();
  const put = await injectPut(app, uploadUrl, bytes, { "content-type": contentType });
  if (put.statusCode !== 200) throw new Error(`uploading answered ${put.statusCode}: ${put.body}`);
  return uploadId;
}

export interface RawResponse {
  status: number;
  body: string;
}

/** A PUT over a real socket to the listening app (the URL's origin is replaced by `base`). */
export function socketPut(
  base: string,
  uploadUrl: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<RawResponse> {
  const target = new URL(pathOf(uploadUrl), base);
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method: "PUT", headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Listens on an ephemeral port; returns the base URL. */
export async function listen(app: App): Promise<string> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

export interface StoredEvent {
  id: string;
  event_type: string;
  webhook_key: string | null;
  payload: Record<string, unknown>;
}

export function eventsOf(ctx: AppContext, caseId: string, type?: string): Promise<StoredEvent[]> {
  let query = ctx.db.root
    .selectFrom("events")
    .select(["id", "event_type", "webhook_key", "payload"])
    .where("case_id", "=", caseId);
  if (type) query = query.where("event_type", "=", type);
  return query.orderBy("created_at").orderBy("id").execute();
}

/** Waits until `check` returns a value other than undefined (polling), or fails after `ms`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  ms = 10_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits until the wall clock has passed `iso` (slot and request deadlines). */
export async function waitUntilPast(iso: string): Promise<void> {
  const ms = new Date(iso).getTime() - Date.now() + 20;
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/** Sets a stored case's status or dry-run flag (the states other features put a case in). */
export async function setCase(
  ctx: AppContext,
  caseId: string,
  change: { status?: string; dryRun?: boolean },
): Promise<void> {
  await ctx.db.root
    .updateTable("cases")
    .set({
      ...(change.status ? { status: change.status } : {}),
      ...(change.dryRun !== undefined ? { dry_run: change.dryRun } : {}),
    })
    .where("id", "=", caseId)
    .execute();
}
