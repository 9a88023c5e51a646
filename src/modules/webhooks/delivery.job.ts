import { SECRET_ID_HEADER, SIGNATURE_HEADER, signWebhookBody } from "@case-decisioning/verify-webhook";
import { Batcher } from "../../platform/batcher.js";
import type { AppContext } from "../../platform/context.js";
import type { Db } from "../../platform/db/index.js";
import { type PlainJobHandler, RescheduleJob } from "../../platform/jobs.js";
import { webhookAttempts } from "../../platform/metrics.js";
import { type SecretBox, secretBoxOf } from "../../platform/secret-box.js";
import {
  type AttemptContext,
  type AttemptKey,
  type AttemptRecord,
  type Outcome,
  recordOutcomes,
  startAttempts,
} from "./deliveries.repo.js";
import { DeliveryGate } from "./delivery-gate.js";
import { DELIVERY_JOB, type DeliveryJobPayload } from "./delivery-queue.js";
import { sendWebhook } from "./http-sender.js";
import { openSecrets } from "./webhook-secrets.js";
import type { WebhookSecret } from "./webhooks.tables.js";

const USER_AGENT = "case-decisioning-webhooks/1.0";

/** A receiver's Retry-After is honoured up to this; beyond it the receiver is not really coming back. */
export const MAX_RETRY_AFTER_MS = 10 * 60 * 1000;

/** Attempt n+1 waits 2^(n-1) seconds after attempt n failed (contract section 2). */
export function backoffMs(failedAttempt: number): number {
  return 1000 * 2 ** Math.max(0, failedAttempt - 1);
}

/** The wait before the next attempt: the backoff, or longer when a 429/503 asked for it. */
export function retryDelayMs(failedAttempt: number, retryAfterMs: number | null): number {
  const backoff = backoffMs(failedAttempt);
  if (retryAfterMs === null) return backoff;
  return Math.max(backoff, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** The secret new attempts sign with, opened, and its id when the configuration names one. */
export function signingSecret(
  box: SecretBox,
  at: Pick<AttemptContext, "tenant_id" | "webhook_key">,
  config: NonNullable<AttemptContext["config"]>,
): {
  id: string | null;
  secret: string;
} {
  const active =
    config.active_secret_id === null
      ? config.secrets[0]
      : config.secrets.find((s) => s.id === config.active_secret_id);
  if (!active) throw new Error("webhook configuration has no active secret");
  const [opened] = openSecrets(box, at.tenant_id, at.webhook_key, [active], config.secrets_sealed);
  return { id: config.active_secret_id, secret: (opened as WebhookSecret).secret };
}

/** Remembers when it last warned about each key, to warn about it at most once a minute. */
class WarnOnce {
  readonly #last = new Map<string, number>();

  warnNow(key: string): boolean {
    const now = Date.now();
    const last = this.#last.get(key);
    if (last !== undefined && now - last < 60_000) return false;
    if (this.#last.size > 10_000) this.#last.clear();
    this.#last.set(key, now);
    return true;
  }
}

const unconfiguredWarnings = new WarnOnce();

/** The attempt log keeps where an attempt went, without the query string (it may carry a token). */
function targetOf(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

function interruptedAttempts(at: AttemptContext): AttemptRecord[] {
  const records: AttemptRecord[] = [];
  for (let n = at.recorded_attempts + 1; n < at.attempt_count; n++) {
    records.push({
      attempt: n,
      startedAt: at.prev_attempt_at ?? new Date(),
      target: null,
      secretId: null,
      statusCode: null,
      latencyMs: null,
      error: "interrupted: the delivering process stopped before the outcome was recorded",
      responseBody: null,
    });
  }
  return records;
}

/** The attempt bookkeeping of every delivery in flight in this process, batched (see Batcher). */
export interface AttemptStore {
  start(key: AttemptKey): Promise<AttemptContext | undefined>;
  record(outcome: Outcome): Promise<void>;
}

export function attemptStore(db: Db): AttemptStore {
  const options = { maxBatch: 64, lanes: 2 };
  const starts = new Batcher<AttemptKey, AttemptContext | undefined>(async (keys) => {
    const found = await startAttempts(db.root, keys);
    return keys.map((k) => found.get(k.deliveryId));
  }, options);
  const records = new Batcher<Outcome, void>(async (outcomes) => {
    await recordOutcomes(db.root, outcomes);
    return outcomes.map(() => undefined);
  }, options);
  return { start: (key) => starts.add(key), record: (outcome) => records.add(outcome) };
}

/**
 * Makes one attempt of a delivery and records it. Resolves to the milliseconds until the next
 * attempt, or null when the delivery is finished. `onSent` learns how long the receiver took.
 */
export async function attemptDelivery(
  ctx: AppContext,
  store: AttemptStore,
  payload: DeliveryJobPayload,
  onSent: (latencyMs: number) => void = () => {},
  onUnconfigured: () => void = () => {},
): Promise<number | null> {
  const { tenantId, deliveryId } = payload;
  const at = await store.start({ tenantId, deliveryId });
  if (!at) return null;
  const n = at.attempt_count;
  const about = { deliveryId, tenantId, webhookKey: at.webhook_key, attempt: n };
  const interrupted = interruptedAttempts(at);

  const giveUp = async (reason: string, level: "warn" | "debug" = "warn") => {
    await store.record({
      tenantId,
      deliveryId,
      attempts: interrupted,
      attempt: n,
      status: "failed",
      attemptCount: n - 1,
      lastStatusCode: null,
      lastError: reason,
      retryInMs: null,
    });
    webhookAttempts.inc({ outcome: "not_sent" });
    ctx.log[level]({ ...about, reason }, "webhook delivery failed for good");
    return null;
  };
  if (!at.config) {
    onUnconfigured();
    // Every event of a tenant without the configuration fails like this: say so once a minute.
    const level = unconfiguredWarnings.warnNow(`${tenantId}/${at.webhook_key}`) ? "warn" : "debug";
    return giveUp(`no webhook configuration "${at.webhook_key}" exists for this tenant`, level);
  }
  if (n > at.config.max_attempts) {
    return giveUp(`all ${at.config.max_attempts} attempts were made; the last was interrupted`);
  }

  const url = new URL(at.config.url);
  const secret = signingSecret(secretBoxOf(ctx.config), at, at.config);
  const body = Buffer.from(at.body, "utf8");
  const startedAt = new Date();
  const sent = await sendWebhook({
    url,
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      [SIGNATURE_HEADER]: signWebhookBody(secret.secret, body),
      ...(secret.id === null ? {} : { [SECRET_ID_HEADER]: secret.id }),
    },
    timeoutMs: at.config.timeout_ms,
    allowPrivateTargets: ctx.config.allowPrivateTargets,
  });
  onSent(sent.latencyMs);

  const last = n >= at.config.max_attempts;
  const retryInMs = sent.ok || last ? null : retryDelayMs(n, sent.retryAfterMs);
  await store.record({
    tenantId,
    deliveryId,
    attempts: [
      ...interrupted,
      {
        attempt: n,
        startedAt,
        target: targetOf(url),
        secretId: secret.id,
        statusCode: sent.statusCode,
        latencyMs: sent.latencyMs,
        error: sent.error,
        responseBody: sent.responseBody,
      },
    ],
    attempt: n,
    status: sent.ok ? "succeeded" : last ? "failed" : "pending",
    attemptCount: n,
    lastStatusCode: sent.statusCode,
    lastError: sent.error,
    retryInMs,
  });
  webhookAttempts.inc({ outcome: sent.ok ? "succeeded" : last ? "failed" : "retrying" });
  if (!sent.ok) {
    const fields = { ...about, statusCode: sent.statusCode, error: sent.error, retryInMs };
    if (last) ctx.log.warn(fields, "webhook delivery failed for good");
    else ctx.log.info(fields, "webhook attempt failed; will retry");
  }
  return retryInMs;
}

/**
 * The handler of the delivery worker. Each run is one attempt: a failed attempt with attempts
 * left reschedules the same job for the backoff (so a retry is the same delivery, the same
 * bytes, the same webhookId); an endpoint that is at its concurrency bound defers the job
 * without counting anything.
 */
export function deliveryHandler(ctx: AppContext): PlainJobHandler<DeliveryJobPayload> {
  const gate = new DeliveryGate({ perEndpoint: ctx.config.webhookEndpointConcurrency });
  const store = attemptStore(ctx.db);
  // Endpoints found without a configuration a moment ago: their deliveries fail at once, so they
  // skip the gate instead of queueing for slots they would hold for no time (fairness only: the
  // configuration is still read for every attempt).
  const recentlyUnconfigured = new Map<string, number>();
  return {
    kind: DELIVERY_JOB,
    mode: "plain",
    async run(job) {
      const { tenantId, webhookKey } = job.payload;
      const endpoint = `${tenantId}/${webhookKey}`;
      if ((recentlyUnconfigured.get(endpoint) ?? 0) > Date.now()) {
        // Still an attempt like any other: a configuration created meanwhile is used, and a failed
        // attempt is retried.
        const retryInMs = await attemptDelivery(ctx, store, job.payload);
        if (retryInMs !== null) throw new RescheduleJob(retryInMs, "next webhook attempt");
        return;
      }
      const entry = await gate.enter(tenantId, webhookKey);
      if ("deferMs" in entry) {
        ctx.log.debug(
          { deliveryId: job.payload.deliveryId, deferMs: entry.deferMs },
          "webhook attempt deferred",
        );
        throw new RescheduleJob(entry.deferMs, "endpoint at its concurrency bound");
      }
      let retryInMs: number | null;
      try {
        retryInMs = await attemptDelivery(
          ctx,
          store,
          job.payload,
          (latencyMs) => entry.release(latencyMs),
          () => {
            if (recentlyUnconfigured.size > 10_000) recentlyUnconfigured.clear();
            recentlyUnconfigured.set(endpoint, Date.now() + 1000);
          },
        );
      } finally {
        // An attempt that ended before sending (nothing to send, or the database failed) frees its slot too.
        entry.release(0);
      }
      if (retryInMs !== null) throw new RescheduleJob(retryInMs, "next webhook attempt");
    },
  };
}
