import { uuid } from "../../platform/crypto.js";
import { AppError } from "../../platform/errors.js";
import { nodeEvent, TIMEOUT } from "../engine/index.js";
import type { NewEvent } from "../webhooks/index.js";
import {
  describeEnd,
  type Explanation,
  fieldReferences,
  isJsonObject,
  type NodeCase,
  type NodeOutcome,
  type NodeReplay,
  type NodeType,
  type OpenWait,
  PROVIDER_ID_PATTERN,
  type RecordedStep,
  ReplayNeedsInput,
  type ResumeOutcome,
  schemaRef,
  type TraceEntry,
} from "../workflows/index.js";
import type { StartResult } from "./broker.js";
import { problemsOf } from "./broker-schemas.js";
import { BROKERS, brokerOf } from "./brokers/index.js";
import { requireOpenedConfig } from "./provider-configs.service.js";
import {
  RETRY_REQUESTED,
  type RetryRequest,
  VENDOR_RESULT,
  type VendorResultOutput,
} from "./provider-resolutions.js";
import { configuredBrokers, insertRun } from "./providers.repo.js";
import { openSession, runIdOf, traceCall } from "./providers.service.js";
import { screenedSubject } from "./screening.service.js";
import { type CallRecord, VendorError } from "./vendor-http.js";
import { pollTime, schedulePoll } from "./vendor-poll.job.js";

export { RETRY_REQUESTED, type RetryRequest, VENDOR_RESULT, type VendorResultOutput };

/**
 * The `provider` node (contract section 5): runs a broker. Its vendor calls are the node's
 * `call`, made by the engine with no transaction open and no case lock held; what they gave is
 * applied in the step's transaction: a result goes on to `next`, a paused vendor (Sumsub) opens
 * a wait whose id is the pending handle, resolved later by the vendor's event (`resumeWait`) or
 * by the expiry (`onTimeout`). A vendor that keeps failing goes to `onError` with `{error}`, or
 * fails the case.
 */
export interface ProviderNode {
  id: string;
  type: "provider";
  provider: string;
  config: Record<string, unknown>;
  expiresInSeconds: number;
  webhookKey: string | undefined;
  next: string;
  onTimeout: string | undefined;
  onError: string | undefined;
}

export const PROVIDER_WAIT = "provider";
export const DEFAULT_PROVIDER_EXPIRES_IN_SECONDS = 86_400;

export type CallResult =
  | { ok: true; runId: string; result: StartResult; calls: CallRecord[] }
  | { ok: false; runId: string; error: string; calls: CallRecord[] };

/** `node.notification` of a provider node, with the pending handle in its output. */
export function providerNotification(
  kase: Pick<NodeCase, "tenantId" | "id">,
  nodeId: string,
  webhookKey: string | undefined,
  payloadType: string,
  output: Record<string, unknown>,
): Omit<NewEvent, "dryRun"> {
  return nodeEvent(kase, "node.notification", { nodeId, webhookKey }, { output }, { payloadType });
}

function errorText(err: unknown): string {
  if (err instanceof VendorError || err instanceof AppError) return err.message;
  throw err;
}

/** A vendor that kept failing: `onError` with `{error}`, or the case fails. */
function vendorFailed(node: ProviderNode, error: string, explain: Explanation): NodeOutcome {
  if (node.onError !== undefined) {
    return { kind: "continue", next: node.onError, output: { error }, explain };
  }
  return { kind: "fail", message: `node ${node.id}: provider ${node.provider} failed: ${error}`, explain };
}

/** No result before the run's expiry: `onTimeout`, or the case fails. */
function timedOut(
  node: ProviderNode,
  wait: Pick<OpenWait, "expiresAt">,
): Extract<ResumeOutcome, { kind: "continue" | "fail" }> {
  const expiresAt = wait.expiresAt?.toISOString() ?? null;
  if (node.onTimeout === undefined) {
    return {
      kind: "fail",
      message: `node ${node.id}: provider ${node.provider} reported no result before ${expiresAt} and the node has no onTimeout`,
    };
  }
  return { kind: "continue", next: node.onTimeout, output: { timedOut: true, expiresAt } };
}

/** The vendor's error a step recorded: in its facts, or (steps recorded before them) its output or message. */
function recordedError(node: ProviderNode, step: RecordedStep): string | undefined {
  if (typeof step.explain?.vendorError === "string") return step.explain.vendorError;
  if (step.status === "failed" && step.error !== null) {
    const prefix = `node ${node.id}: provider ${node.provider} failed: `;
    return step.error.startsWith(prefix) ? step.error.slice(prefix.length) : step.error;
  }
  const output = step.output;
  if (isJsonObject(output) && Object.keys(output).length === 1 && typeof output.error === "string") {
    return output.error;
  }
  return undefined;
}

/**
 * A backtest's run (contract section 8): what the vendor answered the case, as its step
 * recorded it (a result, an error, a result that came later through the wait, or none before
 * the expiry). No call is made; a case whose node never had the vendor's answer needs an input.
 */
function replayRun(node: ProviderNode, replay: NodeReplay): NodeOutcome {
  const step = replay.step;
  if (!step || step.status === "waiting") throw new ReplayNeedsInput(node.id);
  const explain = { brokerId: node.provider, calls: [], replayed: true };
  const wait = step.wait;
  if (wait) {
    if (wait.resolution === VENDOR_RESULT)
      return { kind: "continue", next: node.next, output: step.output, explain };
    if (wait.resolution === TIMEOUT) return timedOut(node, wait);
    throw new ReplayNeedsInput(node.id);
  }
  const error = recordedError(node, step);
  if (error !== undefined) return vendorFailed(node, error, explain);
  return { kind: "continue", next: node.next, output: step.output, explain };
}

/** A screening's hits in words: how many, which were dismissed for the subject, how many are unreviewed. */
function describeHits(entry: TraceEntry): string[] {
  const hitsOf = brokerOf(String(entry.brokerId))?.hitsOf;
  if (!hitsOf || !isJsonObject(entry.output)) return [];
  const output = entry.output;
  const hits = hitsOf(output).filter((h) => h.aboveThreshold);
  const ids = (list: unknown) =>
    new Set(Array.isArray(list) ? list.filter(isJsonObject).map((h) => String(h.id)) : []);
  // An output from before `dismissedHits`: its `unreviewedHits` listed the hits not dismissed.
  const dismissedIds = Array.isArray(output.dismissedHits)
    ? ids(output.dismissedHits)
    : Array.isArray(output.unreviewedHits)
      ? new Set(hits.map((h) => h.id).filter((id) => !ids(output.unreviewedHits).has(id)))
      : new Set<string>();
  const names = (list: typeof hits) => list.map((h) => `${h.name} (${h.score})`).join(", ");
  const raised = hits.filter((h) => !dismissedIds.has(h.id));
  const dismissed = hits.filter((h) => dismissedIds.has(h.id));
  if (hits.length === 0) return ["no hit at or above the threshold"];
  return [
    raised.length > 0
      ? `${raised.length} hit${raised.length === 1 ? "" : "s"} at or above the threshold: ${names(raised)}`
      : "no hit at or above the threshold left in the results",
    ...(typeof output.unreviewedHits === "number" && raised.length > 0
      ? [`${output.unreviewedHits} of them not reviewed yet for this subject`]
      : []),
    ...(dismissed.length > 0
      ? [`${names(dismissed)} marked "no match" for this subject earlier: dismissed, not raised again`]
      : []),
  ];
}

/** What happened at a provider step after it ran: the vendor calls of actions and the verdicts on its hits. */
function describeAfter(entry: TraceEntry): string[] {
  const list = (v: unknown) => (Array.isArray(v) ? v.filter(isJsonObject) : []);
  const when = (at: unknown) => `${String(at).slice(0, 19).replace("T", " ")} UTC`;
  return [
    ...list(entry.actionCalls).map(
      (c) =>
        `${when(c.at)}: vendor call ${String(c.action)} by ${String(c.actor)}: ${
          c.httpStatus === null ? "no answer" : `HTTP ${String(c.httpStatus)}`
        }, ${String(c.durationMs)} ms`,
    ),
    ...list(entry.verdicts).map(
      (v) =>
        `${when(v.at)}: hit ${String(v.hitId)} marked "${String(v.verdict).replace(/_/g, " ")}" by ${String(
          v.actor,
        )}: ${String(v.reason)}`,
    ),
  ];
}

export const providerNode: NodeType<ProviderNode> = {
  type: "provider",
  effects: "external",
  replays: true,
  definition: {
    description:
      "Runs a verification provider (broker); may pause with pending actions until the vendor reports a result.",
    required: ["provider", "next"],
    properties: {
      provider: { type: "string", pattern: PROVIDER_ID_PATTERN },
      config: { type: "object" },
      expiresInSeconds: { ...schemaRef("expiresInSeconds"), default: DEFAULT_PROVIDER_EXPIRES_IN_SECONDS },
      webhookKey: schemaRef("webhookKey"),
      next: schemaRef("nodeRef"),
      onTimeout: schemaRef("nodeRef"),
      onError: schemaRef("nodeRef"),
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next", "onTimeout", "onError"]),
  expressions: () => [],
  check(node, at, problems) {
    const broker = typeof node.provider === "string" ? brokerOf(node.provider) : undefined;
    if (!broker) {
      problems.push({
        path: `${at}.provider`,
        message: `is not a known provider (${[...BROKERS.keys()].join(", ")})`,
      });
      return;
    }
    problems.push(
      ...problemsOf(broker.configSchema, isJsonObject(node.config) ? node.config : {}, `${at}.config`),
    );
  },
  async checkTenant(node, { db, tenantId }) {
    const configured = await configuredBrokers(db, tenantId, [node.provider]);
    return configured.has(node.provider)
      ? undefined
      : `provider "${node.provider}" is not configured for the tenant (PUT /admin/tenants/{t}/providers/${node.provider})`;
  },
  compile(node) {
    return {
      id: node.id,
      type: "provider",
      provider: node.provider as string,
      config: (node.config as Record<string, unknown> | undefined) ?? {},
      expiresInSeconds: (node.expiresInSeconds as number | undefined) ?? DEFAULT_PROVIDER_EXPIRES_IN_SECONDS,
      webhookKey: node.webhookKey as string | undefined,
      next: node.next as string,
      onTimeout: node.onTimeout as string | undefined,
      onError: node.onError as string | undefined,
    };
  },
  async call(node, { ctx, case: kase, vars, seq }): Promise<CallResult> {
    const runId = runIdOf(kase.id, seq);
    const broker = brokerOf(node.provider);
    if (!broker) return { ok: false, runId, error: `provider "${node.provider}" is not known`, calls: [] };
    let session: ReturnType<typeof openSession> | undefined;
    try {
      const config = await requireOpenedConfig(ctx, kase.tenantId, broker.id);
      session = openSession(ctx, kase.tenantId, broker, config, {
        brokerId: broker.id,
        caseId: kase.id,
        runId,
        actor: `node:${node.id}`,
      });
      const subject = await screenedSubject(ctx.db.root, kase.tenantId, broker, {
        id: kase.id,
        type: kase.type,
        subject: vars.subject,
        external_customer_id: kase.externalCustomerId,
      });
      const result = await broker.start(session.call, {
        ...subject,
        runId,
        nodeId: node.id,
        config: broker.parseConfig(node.config),
      });
      return { ok: true, runId, result, calls: session.calls };
    } catch (err) {
      return { ok: false, runId, error: errorText(err), calls: session?.calls ?? [] };
    }
  },
  async evaluate(node, { tx, case: kase, seq, called, replay }) {
    if (replay) return replayRun(node, replay);
    const c = called as CallResult;
    const explain = {
      brokerId: node.provider,
      calls: c.calls.map((r) => traceCall({ ...r, actor: `node:${node.id}` })),
    };
    const run = {
      id: c.runId,
      caseId: kase.id,
      nodeId: node.id,
      seq,
      brokerId: node.provider,
      config: node.config,
      waitId: null,
      expiresAt: null,
      subjectRef: null,
      state: {},
      output: null,
      error: null,
    };
    if (!c.ok) {
      await insertRun(tx, kase.tenantId, { ...run, status: "failed", error: c.error });
      // The error is recorded with the step, for a backtest to replay it.
      return vendorFailed(node, c.error, { ...explain, vendorError: c.error });
    }
    const { result } = c;
    if (result.kind === "completed") {
      await insertRun(tx, kase.tenantId, {
        ...run,
        status: "completed",
        subjectRef: result.subjectRef ?? null,
        output: result.output,
      });
      return { kind: "continue", next: node.next, output: result.output, explain };
    }
    const waitId = uuid();
    const expiresAt = new Date(Date.now() + node.expiresInSeconds * 1000);
    await insertRun(tx, kase.tenantId, {
      ...run,
      status: "waiting",
      waitId,
      expiresAt,
      subjectRef: result.subjectRef,
      state: result.state,
    });
    if (brokerOf(node.provider)?.poll) {
      await schedulePoll(tx, { tenantId: kase.tenantId, runId: c.runId }, pollTime(new Date(), expiresAt));
    }
    const events = result.notification
      ? [
          {
            ...providerNotification(kase, node.id, node.webhookKey, result.notification.payloadType, {
              ...result.notification.output,
              pending_handle: waitId,
            }),
            dryRun: kase.dryRun,
          },
        ]
      : [];
    return {
      kind: "wait",
      wait: {
        id: waitId,
        kind: PROVIDER_WAIT,
        ref: result.subjectRef,
        expiresAt,
        timesOut: true,
        providerId: node.provider,
        data: { runId: c.runId },
      },
      output: { brokerId: node.provider, subjectRef: result.subjectRef },
      events,
      explain,
    };
  },
  resume(node, resolution, wait) {
    if (resolution.kind === VENDOR_RESULT) {
      const { output, calls } = resolution.output as VendorResultOutput;
      return { kind: "continue", next: node.next, output, explain: { brokerId: node.provider, calls } };
    }
    if (resolution.kind === RETRY_REQUESTED) {
      const retry = resolution.output as RetryRequest;
      const event = providerNotification(
        { tenantId: retry.tenantId, id: retry.caseId },
        node.id,
        node.webhookKey,
        retry.payloadType,
        { ...retry.output, pending_handle: wait.id },
      );
      return { kind: "keep_waiting", events: [event] };
    }
    return timedOut(node, wait);
  },
  pending(node) {
    const broker = brokerOf(node.provider);
    return {
      providerId: node.provider,
      availableActions: (broker?.pendingActions ?? []).map((a) => ({
        id: a.id,
        label: a.label,
        resolvesAwait: false,
      })),
    };
  },
  describe(entry) {
    const calls = Array.isArray(entry.calls)
      ? (entry.calls as Array<{ action: string; httpStatus: number | null }>)
      : [];
    const lines = [
      `${String(entry.brokerId ?? "provider")}: ${calls.length} vendor call${calls.length === 1 ? "" : "s"}${
        calls.length > 0
          ? ` (${calls.map((c) => `${c.action} ${c.httpStatus ?? "no answer"}`).join(", ")})`
          : ""
      }`,
    ];
    if (entry.status === "waiting")
      return [...lines, "waiting for the vendor's result", ...describeAfter(entry)];
    return [...lines, ...describeHits(entry), ...describeEnd(entry), ...describeAfter(entry)];
  },
};
