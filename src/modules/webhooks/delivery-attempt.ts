import type { AppContext } from "../../platform/context.js";
import { webhookAttempts } from "../../platform/metrics.js";
import { type SecretBox, secretBoxOf } from "../../platform/secret-box.js";
import type { AttemptContext, AttemptRecord, Outcome } from "./deliveries.repo.js";
import type { Answer, Slot } from "./delivery-gate.js";
import type { SendOutcome } from "./http-sender.js";
import { sendFromThread } from "./sender-thread.js";
import { openSecrets } from "./webhook-secrets.js";
import type { WebhookSecret } from "./webhooks.tables.js";

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
  const key = `${at.tenant_id}\u0000${at.webhook_key}\u0000${active.id ?? ""}\u0000${config.secrets_sealed}\u0000${active.secret}`;
  let opened = openedSecrets.get(box);
  if (!opened) {
    opened = new Map();
    openedSecrets.set(box, opened);
  }
  let secret = opened.get(key);
  if (secret === undefined) {
    const [plain] = openSecrets(box, at.tenant_id, at.webhook_key, [active], config.secrets_sealed);
    secret = (plain as WebhookSecret).secret;
    if (opened.size >= OPENED_SECRETS) opened.clear();
    opened.set(key, secret);
  }
  return { id: config.active_secret_id, secret };
}

/**
 * Signing secrets opened, by what they were opened from (the sealed text, bound to its tenant,
 * configuration and id): an AES-GCM decryption per secret, not per attempt (1.4 % of the
 * service's busy time when every case is delivered). A rotated secret is a new sealed text.
 */
const openedSecrets = new WeakMap<SecretBox, Map<string, string>>();
const OPENED_SECRETS = 10_000;

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

/** The log rows of attempts a process that died had started: counted, never recorded. */
function interruptedAttempts(at: AttemptContext): AttemptRecord[] {
  return Array.from({ length: at.interrupted }, (_, i) => ({
    attempt: at.recorded_attempts + 1 + i,
    startedAt: at.prev_attempt_at ?? new Date(),
    target: null,
    secretId: null,
    statusCode: null,
    latencyMs: null,
    error: "interrupted: the delivering process stopped before the outcome was recorded",
    responseBody: null,
  }));
}

/**
 * What an attempt's outcome tells its endpoint's lane: no complete answer (a timeout, a network
 * error), a 5xx or a 429 say the endpoint has had enough; a 3xx or another 4xx say nothing of its
 * load (decision 0007).
 */
export function answerOf(sent: Pick<SendOutcome, "ok" | "statusCode">): Answer {
  if (sent.ok) return "ok";
  if (sent.statusCode === null || sent.statusCode >= 500 || sent.statusCode === 429) return "overloaded";
  return "neither";
}

/** What an attempt decided of its delivery, before the worker knows whether its claim is done. */
export type AttemptOutcome = Pick<
  Outcome,
  "status" | "attemptCount" | "sent" | "lastError" | "retryInMs" | "failures"
>;

/**
 * The outcome to record, as one object literal (decision 0038: a spread of shared fields with more
 * added after it costs a map transition per field, on every delivery). `claimDone` is the
 * worker's to set.
 */
export function outcomeOf(at: AttemptContext, o: AttemptOutcome): Outcome {
  return {
    tenantId: at.tenant_id,
    deliveryId: at.id,
    turn: at.turn,
    status: o.status,
    attemptCount: o.attemptCount,
    sent: o.sent,
    lastError: o.lastError,
    retryInMs: o.retryInMs,
    failures: o.failures,
    claimDone: null,
  };
}

/** Where a claimed delivery's attempt goes: a slot of its endpoint's lane, or back to the queue. */
export type Entry = Slot | { deferMs: number };

/**
 * Makes the attempt a claim counted, and answers its outcome for the batched bookkeeping. `enter`
 * asks the endpoint's lane for a slot once the attempt is known to be sent; a lane that is full
 * hands the delivery back to the queue for later, without counting an attempt.
 */
export async function attemptDelivery(
  ctx: AppContext,
  at: AttemptContext,
  enter: () => Promise<Entry>,
): Promise<Outcome> {
  const n = at.attempt;
  const { tenant_id: tenantId, id: deliveryId } = at;
  const about = { deliveryId, tenantId, webhookKey: at.webhook_key, attempt: n };
  const interrupted = interruptedAttempts(at);
  const giveUp = (reason: string, level: "warn" | "debug" = "warn") => {
    webhookAttempts.inc({ outcome: "not_sent" });
    ctx.log[level]({ ...about, reason }, "webhook delivery failed for good");
    return outcomeOf(at, {
      status: "failed",
      attemptCount: n - 1,
      sent: null,
      lastError: reason,
      retryInMs: null,
      failures: interrupted,
    });
  };
  if (!at.config) {
    // Every event of a tenant without the configuration fails like this: say so once a minute.
    const level = unconfiguredWarnings.warnNow(`${tenantId}/${at.webhook_key}`) ? "warn" : "debug";
    return giveUp(`no webhook configuration "${at.webhook_key}" exists for this tenant`, level);
  }
  if (n > at.config.max_attempts) {
    return giveUp(`all ${at.config.max_attempts} attempts were made; the last was interrupted`);
  }

  const entry = await enter();
  if ("deferMs" in entry) {
    ctx.log.debug({ deliveryId, deferMs: entry.deferMs }, "webhook attempt deferred");
    return outcomeOf(at, {
      status: "pending",
      attemptCount: n - 1,
      sent: null,
      lastError: null,
      retryInMs: entry.deferMs,
      failures: interrupted,
    });
  }
  let sent: SendOutcome;
  const url = new URL(at.config.url);
  let secret: { id: string | null; secret: string };
  const startedAt = new Date();
  try {
    secret = signingSecret(secretBoxOf(ctx.config), at, at.config);
    // Signed and sent on the sending thread (decision 0039).
    sent = await sendFromThread({
      href: url.href,
      body: at.body,
      secret: secret.secret,
      secretId: secret.id,
      timeoutMs: at.config.timeout_ms,
      allowPrivateTargets: ctx.config.allowPrivateTargets,
    });
  } catch (err) {
    // An attempt that ended before sending frees its slot too, and tells the lane nothing.
    entry.release(0, "neither");
    throw err;
  }
  entry.release(sent.latencyMs, answerOf(sent));

  const last = n >= at.config.max_attempts;
  const retryInMs = sent.ok || last ? null : retryDelayMs(n, sent.retryAfterMs);
  const record: AttemptRecord = {
    attempt: n,
    startedAt,
    target: targetOf(url),
    secretId: secret.id,
    statusCode: sent.statusCode,
    latencyMs: sent.latencyMs,
    error: sent.error,
    responseBody: sent.responseBody,
  };
  webhookAttempts.inc({ outcome: sent.ok ? "succeeded" : last ? "failed" : "retrying" });
  if (!sent.ok) {
    const fields = { ...about, statusCode: sent.statusCode, error: sent.error, retryInMs };
    if (last) ctx.log.warn(fields, "webhook delivery failed for good");
    else ctx.log.info(fields, "webhook attempt failed; will retry");
  }
  return outcomeOf(at, {
    status: sent.ok ? "succeeded" : last ? "failed" : "pending",
    attemptCount: n,
    sent: record,
    lastError: sent.error,
    retryInMs,
    // A success is logged on the delivery row; a failure keeps a row of its own.
    failures: sent.ok ? interrupted : [...interrupted, record],
  });
}
