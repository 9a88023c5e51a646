import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { CreateBucketCommand, DeleteBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import S3rver from "s3rver";
import type { S3Config } from "../../src/config.js";

/**
 * An S3 server for the tests, on loopback: s3rver (objects, buckets, HEAD and GET in S3's own
 * wire format) behind a gate that does what s3rver leaves out for presigned `PUT`s, as S3 does:
 * it recomputes the SigV4 query signature over the headers the URL lists as signed (so a
 * different `Content-Type`, `Content-Length` or `If-None-Match` is 403 SignatureDoesNotMatch),
 * refuses a body whose length is not its `Content-Length` (400 IncompleteBody), and answers 412
 * to a create-only `PUT` of an object that a presigned `PUT` through it has created (every upload
 * of the tests is one). `enforceIfNoneMatch = false` turns the last off,
 * like the S3-compatible servers that ignore the header.
 */

/** s3rver's built-in account: any other key id is refused with 403. */
export const TEST_S3_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const REGION = "us-east-1";

export interface TestS3 {
  /** The gate's URL: what the service's CDS_S3_ENDPOINT points at. */
  endpoint: string;
  /** A client of the server with valid credentials (path style). */
  client: S3Client;
  /** Whether a `PUT` with `If-None-Match: *` of an existing object answers 412 (default true). */
  enforceIfNoneMatch: boolean;
  /** Uploads whose body is still arriving. */
  readonly uploadsInProgress: number;
  /** A new, empty bucket; returns the service's S3 configuration for it. */
  createBucket(name?: string): Promise<S3Config>;
  deleteBucket(name: string): Promise<void>;
  close(): Promise<void>;
}

let buckets = 0;

/** Sets the AWS SDK's credentials in the environment, as a deployment would (child processes inherit them). */
export function useTestS3Credentials(): void {
  process.env.AWS_ACCESS_KEY_ID = TEST_S3_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = TEST_S3_CREDENTIALS.secretAccessKey;
  // Never ask an instance metadata endpoint: tests reach loopback only.
  process.env.AWS_EC2_METADATA_DISABLED = "true";
}

export async function startTestS3(): Promise<TestS3> {
  useTestS3Credentials();
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "cds-s3-"));
  const backend = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  const { port: backendPort } = (await backend.run()) as AddressInfo;
  let inProgress = 0;
  const locked = new Set<string>();
  /** Objects stored through presigned PUTs: what a create-only PUT is checked against. */
  const created = new Set<string>();

  const state = { enforceIfNoneMatch: true };

  const gate = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://gate");
    const presignedPut = req.method === "PUT" && url.searchParams.has("X-Amz-Signature");
    if (req.method === "PUT" && !presignedPut && !req.headers.authorization) {
      // s3rver lets anyone write; a bucket that is not public does not.
      req.resume();
      sendError(res, { status: 403, code: "AccessDenied", message: "Access Denied" });
      return;
    }
    if (!presignedPut) {
      forward(req, res, backendPort, req);
      return;
    }
    inProgress++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("close", () => {
      if (!req.complete) inProgress--;
    });
    req.on("end", () => {
      inProgress--;
      const body = Buffer.concat(chunks);
      handlePresignedPut(req, url, body, state, locked, created)
        .then((checked) => {
          if ("refusal" in checked) {
            sendError(res, checked.refusal);
            return;
          }
          // A create-only PUT holds its key until the object is stored: the next one sees it then.
          forward(req, res, backendPort, body, (status) => {
            if (status !== undefined && status < 300) created.add(checked.key);
            if (checked.lock) locked.delete(checked.lock);
          });
        })
        .catch((err: Error) => sendError(res, { status: 500, code: "InternalError", message: err.message }));
    });
  });
  await new Promise<void>((resolve) => gate.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
  const client = clientFor(endpoint);

  return {
    endpoint,
    client,
    get enforceIfNoneMatch() {
      return state.enforceIfNoneMatch;
    },
    set enforceIfNoneMatch(value: boolean) {
      state.enforceIfNoneMatch = value;
    },
    get uploadsInProgress() {
      return inProgress;
    },
    async createBucket(name = `cds-test-${process.pid}-${++buckets}`) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return { bucket: name, region: REGION, endpoint, forcePathStyle: true };
    },
    async deleteBucket(name) {
      await client.send(new DeleteBucketCommand({ Bucket: name }));
    },
    async close() {
      gate.closeAllConnections();
      await new Promise<void>((resolve) => gate.close(() => resolve()));
      await backend.close();
      client.destroy();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

function clientFor(endpoint: string): S3Client {
  return new S3Client({
    region: REGION,
    endpoint,
    forcePathStyle: true,
    credentials: TEST_S3_CREDENTIALS,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** The checks S3 makes of a presigned PUT that s3rver does not; undefined when it may proceed. */
async function handlePresignedPut(
  req: http.IncomingMessage,
  url: URL,
  body: Buffer,
  state: { enforceIfNoneMatch: boolean },
  locked: Set<string>,
  created: ReadonlySet<string>,
): Promise<{ refusal: Refusal } | { key: string; lock?: string }> {
  const q = url.searchParams;
  const [, bucket, ...keyParts] = url.pathname.split("/");
  const key = keyParts.map(decodeURIComponent).join("/");
  const date = parseAmzDate(q.get("X-Amz-Date") ?? "");
  const expires = Number(q.get("X-Amz-Expires"));
  const signed = (q.get("X-Amz-SignedHeaders") ?? "").split(";").filter((h) => h !== "host");
  if (!bucket || !key || !date || !Number.isInteger(expires)) {
    return { refusal: { status: 403, code: "AccessDenied", message: "malformed presigned URL" } };
  }
  if (Date.now() > date.getTime() + expires * 1000) {
    return { refusal: { status: 403, code: "AccessDenied", message: "Request has expired" } };
  }
  const header = (name: string) =>
    (signed.includes(name) ? req.headers[name] : undefined) as string | undefined;
  const contentLength = header("content-length");
  const expected = new URL(
    await getSignedUrl(
      clientFor(`http://${req.headers.host}`),
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        ContentType: header("content-type"),
        ContentLength: contentLength === undefined ? undefined : Number(contentLength),
        IfNoneMatch: header("if-none-match"),
      }),
      { expiresIn: expires, signingDate: date, signableHeaders: new Set(signed) },
    ),
  ).searchParams;
  if (
    expected.get("X-Amz-Signature") !== q.get("X-Amz-Signature") ||
    expected.get("X-Amz-SignedHeaders") !== q.get("X-Amz-SignedHeaders")
  ) {
    return {
      refusal: {
        status: 403,
        code: "SignatureDoesNotMatch",
        message: "The request signature we calculated does not match the signature you provided.",
      },
    };
  }
  if (Number(req.headers["content-length"]) !== body.length) {
    return {
      refusal: {
        status: 400,
        code: "IncompleteBody",
        message: "the body's length is not its Content-Length",
      },
    };
  }
  if (state.enforceIfNoneMatch && req.headers["if-none-match"] === "*") {
    const lockKey = `${bucket}/${key}`;
    const exists412 = {
      refusal: {
        status: 412,
        code: "PreconditionFailed",
        message: "At least one of the pre-conditions you specified did not hold",
      },
    };
    // Checked and taken in one step: of racing PUTs exactly one goes on to look and store.
    if (locked.has(lockKey) || created.has(lockKey)) return exists412;
    locked.add(lockKey);
    return { key: lockKey, lock: lockKey };
  }
  return { key: `${bucket}/${key}` };
}

function parseAmzDate(raw: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(raw);
  if (!m) return undefined;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

function sendError(res: http.ServerResponse, refusal: Refusal): void {
  res.writeHead(refusal.status, { "content-type": "application/xml", connection: "close" });
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>${refusal.message}</Message></Error>`,
  );
}

/** Passes a request on to s3rver and its answer back; `body` is the request itself or its buffered bytes. */
function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  port: number,
  body: http.IncomingMessage | Buffer,
  done: (status?: number) => void = () => {},
): void {
  const upstream = http.request(
    { host: "127.0.0.1", port, method: req.method, path: req.url, headers: req.headers, agent: false },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on("end", () => done(answer.statusCode));
    },
  );
  upstream.on("error", (err) => {
    done();
    if (!res.headersSent) sendError(res, { status: 502, code: "BadGateway", message: err.message });
    else res.destroy();
  });
  if (Buffer.isBuffer(body)) upstream.end(body);
  else body.pipe(upstream);
}
