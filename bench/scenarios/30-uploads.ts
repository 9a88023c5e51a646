import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { startTestS3 } from "../../test/support/s3.js";
import { runIfMain } from "../lib/harness.js";
import { insertStoredCase } from "../lib/provision.js";
import { median, percentile, round } from "../lib/stats.js";
import type { BenchContext, BenchServer, ResultRow, Scenario } from "../lib/types.js";

/**
 * Upload throughput over the signed URL (signature and header checks, streamed to a temporary
 * file, synced, linked into place) against the plainest possible upload: a bare Node HTTP server
 * piping the request into a file. Both run in a child process of their own on this machine; the
 * client sends the same 5 MiB body one upload at a time, the two interleaved round by round.
 */
const FILE_BYTES = 5 * 1024 * 1024;
const UPLOADS_PER_ROUND = 8;
const GOAL = 0.8;

interface Upload {
  url: string;
  headers: Record<string, string>;
}

/** One PUT over a fresh connection; resolves with the seconds it took, failing on a non-2xx. */
function timedPut(upload: Upload, body: Buffer): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = http.request(upload.url, { method: "PUT", headers: upload.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        if ((res.statusCode ?? 0) >= 300) {
          reject(new Error(`PUT answered ${res.statusCode}: ${Buffer.concat(chunks).toString()}`));
          return;
        }
        resolve(Number(process.hrtime.bigint() - started) / 1e9);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * The baseline: a bare `http.createServer` piping each body to a file, in its own process. With
 * `sync`, it also syncs each file before answering (for scale, not for the goal).
 */
async function startBareServer(dir: string, sync: boolean): Promise<{ url: string; child: ChildProcess }> {
  const code = `
    const http = require("node:http");
    const fs = require("node:fs");
    const path = require("node:path");
    const { pipeline } = require("node:stream/promises");
    let n = 0;
    const server = http.createServer(async (req, res) => {
      const file = path.join(process.env.BARE_DIR, String(n++));
      try {
        await pipeline(req, fs.createWriteStream(file, { flush: process.env.BARE_SYNC === "1" }));
        res.writeHead(200).end();
      } catch {
        res.writeHead(500).end();
      }
    });
    server.listen(0, "127.0.0.1", () => console.log(String(server.address().port)));`;
  const child = spawn(process.execPath, ["-e", code], {
    env: { ...process.env, BARE_DIR: dir, BARE_SYNC: sync ? "1" : "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout?.once("data", (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once("exit", (exitCode) => reject(new Error(`the bare server exited (${exitCode})`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** Enough pending requests, on enough cases, for `count` slots (30 per request, 100 per case). */
interface PendingRequest {
  caseId: string;
  rfiId: string;
  headers: Record<string, string>;
}

async function requestsFor(server: BenchServer, count: number): Promise<PendingRequest[]> {
  const partner = await server.partner({ scopes: ["cases:write", "cases:read"] });
  const cases = await server.withDb(async (db) => {
    const ids: string[] = [];
    for (let i = 0; i < Math.ceil(count / 90); i++) {
      ids.push(await insertStoredCase(db, partner.tenantId, "in_review"));
    }
    return ids;
  });
  const requests: PendingRequest[] = [];
  for (const caseId of cases) {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/cases/${caseId}/rfi`, {
        method: "POST",
        headers: { ...partner.headers, "content-type": "application/json" },
        body: JSON.stringify({ to: "ada@example.com", subject: "Documents", body: "Please upload them." }),
      });
      if (res.status !== 201)
        throw new Error(`raising a request answered ${res.status}: ${await res.text()}`);
      requests.push({
        caseId,
        rfiId: ((await res.json()) as { rfiId: string }).rfiId,
        headers: partner.headers,
      });
    }
  }
  return requests;
}

async function mintUpload(server: BenchServer, request: PendingRequest, bytes = FILE_BYTES): Promise<Upload> {
  const res = await fetch(`${server.url}/cases/${request.caseId}/rfi/${request.rfiId}/documents`, {
    method: "POST",
    headers: { ...request.headers, "content-type": "application/json" },
    body: JSON.stringify({ filename: "bench.pdf", contentType: "application/pdf", sizeBytes: bytes }),
  });
  if (res.status !== 201) throw new Error(`minting a slot answered ${res.status}: ${await res.text()}`);
  const { uploadUrl } = (await res.json()) as { uploadUrl: string };
  const signed = new URL(uploadUrl);
  return {
    // The disk store's URL names the configured public URL; the bench reaches the service where
    // it listens. A bucket's URL is used as it is.
    url: signed.pathname.startsWith("/uploads/")
      ? `${server.url}${signed.pathname}${signed.search}`
      : uploadUrl,
    headers: {
      "content-type": "application/pdf",
      "content-length": String(bytes),
      "if-none-match": "*",
    },
  };
}

/** The sizes of the S3 part, and how many uploads of each per round. */
const S3_SIZES = [
  { label: "1 MiB", bytes: 2 ** 20, perRound: 10 },
  { label: "10 MiB", bytes: 10 * 2 ** 20, perRound: 4 },
];

/**
 * The S3 store: the service's presigned upload URL (type, length and If-None-Match: * signed)
 * against a bare presigned PUT of the same bytes made with the SDK and nothing pinned, to the same
 * test S3 server (s3rver behind the tests' verifying gate), from the same client, interleaved.
 */
async function runS3(ctx: BenchContext): Promise<{ rows: ResultRow[]; notes: string[] }> {
  const s3 = await startTestS3();
  try {
    const bucket = await s3.createBucket();
    const server = await ctx.startServer({
      env: {
        CDS_BLOB_STORE: "s3",
        CDS_S3_BUCKET: bucket.bucket,
        CDS_S3_ENDPOINT: s3.endpoint,
        CDS_S3_REGION: bucket.region,
        CDS_S3_FORCE_PATH_STYLE: "true",
      },
    });
    const rounds = ctx.settings.repeats + 1;
    const total = S3_SIZES.reduce((n, size) => n + size.perRound * rounds, 0);
    const requests = await requestsFor(server, total);
    let used = 0;
    let bare = 0;
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    for (const size of S3_SIZES) {
      const body = Buffer.alloc(size.bytes, 0x25);
      const signedTimes: number[] = [];
      const bareTimes: number[] = [];
      const ratios: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const uploads: Upload[] = [];
        for (let i = 0; i < size.perRound; i++) {
          const request = requests[Math.floor(used++ / 30)];
          if (!request) throw new Error("ran out of pending requests for slots");
          uploads.push(await mintUpload(server, request, size.bytes));
        }
        const bareUploads: Upload[] = [];
        for (let i = 0; i < size.perRound; i++) {
          const url = await getSignedUrl(
            s3.client,
            new PutObjectCommand({ Bucket: bucket.bucket, Key: `bare/${size.bytes}/${bare++}` }),
            { expiresIn: 600 },
          );
          bareUploads.push({ url, headers: { "content-length": String(size.bytes) } });
        }
        const signed: number[] = [];
        const plain: number[] = [];
        // Alternated upload by upload, so that drift on a noisy machine hits both alike.
        for (let i = 0; i < size.perRound; i++) {
          signed.push(await timedPut(uploads[i] as Upload, body));
          plain.push(await timedPut(bareUploads[i] as Upload, body));
        }
        const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
        if (round > 0) {
          signedTimes.push(...signed);
          bareTimes.push(...plain);
          ratios.push(sum(plain) / sum(signed));
        }
        ctx.log(
          `S3 ${size.label} round ${round}${round === 0 ? " (warm-up)" : ""}: signed ${Math.round((sum(signed) / signed.length) * 1000)} ms,` +
            ` bare ${Math.round((sum(plain) / plain.length) * 1000)} ms per upload`,
        );
      }
      const mibps = (times: number[]) => size.bytes / 2 ** 20 / median(times);
      const ratio = median(ratios);
      rows.push(
        {
          name: `S3 ${size.label}: bare presigned PUT`,
          figures: {
            "MiB/s": round(mibps(bareTimes)),
            "p50 ms": round(median(bareTimes) * 1000),
            "p99 ms": round(percentile(bareTimes, 99) * 1000),
            "of bare": 1,
          },
        },
        {
          name: `S3 ${size.label}: PUT {uploadUrl} (S3 store)`,
          figures: {
            "MiB/s": round(mibps(signedTimes)),
            "p50 ms": round(median(signedTimes) * 1000),
            "p99 ms": round(percentile(signedTimes, 99) * 1000),
            "of bare": round(ratio),
          },
        },
      );
      notes.push(
        `S3 ${size.label}: ${signedTimes.length} uploads each way; goal at least ${GOAL} of the bare presigned PUT — ${ratio >= GOAL ? "met" : "MISSED"}`,
      );
    }
    return { rows, notes };
  } finally {
    await s3.close();
  }
}

const scenario: Scenario = {
  name: "uploads",
  description:
    "5 MiB PUT over the disk store's signed URL against a bare Node HTTP server writing to disk; 1 and 10 MiB through the S3 store against a bare presigned PUT to the same S3 server",
  async run(ctx) {
    const server = await ctx.startServer();
    const rounds = ctx.settings.repeats + 1;
    const requests = await requestsFor(server, rounds * UPLOADS_PER_ROUND);
    const bareDir = fs.mkdtempSync(path.join(os.tmpdir(), "cds-bench-bare-"));
    const bare = await startBareServer(bareDir, false);
    const bareSynced = await startBareServer(bareDir, true);
    const body = Buffer.alloc(FILE_BYTES, 0x25);
    const service: number[] = [];
    const baseline: number[] = [];
    const syncedBaseline: number[] = [];
    let used = 0;
    try {
      for (let round = 0; round < rounds; round++) {
        const uploads: Upload[] = [];
        for (let i = 0; i < UPLOADS_PER_ROUND; i++) {
          const request = requests[Math.floor(used++ / 30)];
          if (!request) throw new Error("ran out of pending requests for slots");
          uploads.push(await mintUpload(server, request));
        }
        let serviceSeconds = 0;
        for (const upload of uploads) serviceSeconds += await timedPut(upload, body);
        const bareRun = async (url: string) => {
          let seconds = 0;
          for (let i = 0; i < UPLOADS_PER_ROUND; i++) {
            seconds += await timedPut(
              { url: `${url}/upload`, headers: { "content-type": "application/pdf" } },
              body,
            );
          }
          return seconds;
        };
        const bareSeconds = await bareRun(bare.url);
        const syncedSeconds = await bareRun(bareSynced.url);
        for (const f of fs.readdirSync(bareDir)) fs.rmSync(path.join(bareDir, f));
        const mibps = (seconds: number) => (UPLOADS_PER_ROUND * FILE_BYTES) / 2 ** 20 / seconds;
        // The first round warms both up and is not counted.
        if (round > 0) {
          service.push(mibps(serviceSeconds));
          baseline.push(mibps(bareSeconds));
          syncedBaseline.push(mibps(syncedSeconds));
        }
        ctx.log(
          `round ${round}${round === 0 ? " (warm-up)" : ""}: signed URL` +
            ` ${Math.round(mibps(serviceSeconds))} MiB/s, bare server ${Math.round(mibps(bareSeconds))} MiB/s,` +
            ` bare server with sync ${Math.round(mibps(syncedSeconds))} MiB/s`,
        );
      }
    } finally {
      bare.child.kill("SIGTERM");
      bareSynced.child.kill("SIGTERM");
      fs.rmSync(bareDir, { recursive: true, force: true });
    }
    const ratio = median(service.map((s, i) => s / (baseline[i] as number)));
    const syncedRatio = median(syncedBaseline.map((s, i) => s / (baseline[i] as number)));
    const onS3 = await runS3(ctx);
    return {
      rows: [
        { name: "PUT bare Node server", figures: { "MiB/s": round(median(baseline)), "of bare": 1 } },
        {
          name: "PUT bare Node server, synced",
          figures: { "MiB/s": round(median(syncedBaseline)), "of bare": round(syncedRatio) },
        },
        {
          name: "PUT {uploadUrl}",
          figures: { "MiB/s": round(median(service)), "of bare": round(ratio) },
        },
        ...onS3.rows,
      ],
      notes: [
        `database: ${server.database}; ${UPLOADS_PER_ROUND} sequential uploads of ${FILE_BYTES} bytes per round, ` +
          `${service.length} rounds; "of bare" is the median of the per-round ratios`,
        `goal: at least ${GOAL} of the bare server — ${ratio >= GOAL ? "met" : "MISSED"}`,
        "the signed URL syncs the file and its directory before answering (no partial object after a power " +
          'loss); the bare server does not. "synced" is the bare server syncing each file, for scale',
        ...onS3.notes,
        "S3: the test S3 server (s3rver behind the tests' gate, which buffers each body and checks its " +
          'signature) on this machine; "of bare" is the median of the per-round ratios of total PUT time',
      ],
    };
  },
};

export default scenario;

await runIfMain(import.meta.url, scenario);
