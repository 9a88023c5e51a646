import { randomBase62 } from "../../../platform/crypto.js";
import type { NewEvent } from "../../webhooks/index.js";
import type { CompiledOutput } from "../../workflows/index.js";
import {
  compileOutput,
  describeEnd,
  fieldReferences,
  LIMITS,
  mapExpressions,
  type NodeCase,
  type NodeType,
  schemaRef,
} from "../../workflows/index.js";
import { nodeEvent } from "./node-event.js";

/** Emits `external_callback.dispatch` and pauses until the callback (`next`) or the expiry (`onTimeout`). */
export interface ExternalCallbackNode {
  id: string;
  type: "external_callback";
  payload: CompiledOutput;
  webhookKey: string | undefined;
  expiresInSeconds: number;
  next: string;
  onTimeout: string | undefined;
}

/** The kind of the waits of this node type, and the resolution a delivered callback reports. */
export const CALLBACK_WAIT = "callback";

function dispatchEvent(
  kase: NodeCase,
  input: {
    nodeId: string;
    webhookKey: string | undefined;
    callbackUrl: string;
    expiresAt: Date;
    payload: unknown;
  },
): NewEvent {
  const { callbackUrl, expiresAt, payload } = input;
  const body = { callbackUrl, expiresAt: expiresAt.toISOString(), payload };
  return { ...nodeEvent(kase, "external_callback.dispatch", input, body), dryRun: kase.dryRun };
}

export const externalCallbackNode: NodeType<ExternalCallbackNode> = {
  type: "external_callback",
  effects: "transaction",
  // Its event and wait are written by the engine, which a backtest does not; a backtest resumes
  // the wait with the callback's body the case recorded (its step's output).
  replays: true,
  definition: {
    description:
      "Emits `external_callback.dispatch` and pauses until the callback (`next`) or the expiry (`onTimeout`).",
    required: ["next"],
    properties: {
      payload: schemaRef("output"),
      webhookKey: schemaRef("webhookKey"),
      expiresInSeconds: { ...schemaRef("expiresInSeconds"), default: LIMITS.defaultCallbackExpiresInSeconds },
      next: schemaRef("nodeRef"),
      onTimeout: schemaRef("nodeRef"),
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next", "onTimeout"]),
  expressions: (node, at) => mapExpressions(node, at, "payload"),
  compile(node) {
    return {
      id: node.id,
      type: "external_callback",
      payload: compileOutput(node.id, node.payload as Record<string, string> | undefined),
      webhookKey: node.webhookKey as string | undefined,
      expiresInSeconds:
        (node.expiresInSeconds as number | undefined) ?? LIMITS.defaultCallbackExpiresInSeconds,
      next: node.next as string,
      onTimeout: node.onTimeout as string | undefined,
    };
  },
  evaluate(node, { vars, case: kase, ctx }) {
    const payload = node.payload.evaluate(vars);
    const callbackRef = randomBase62(32);
    const expiresAt = new Date(Date.now() + node.expiresInSeconds * 1000);
    const callbackUrl = `${ctx.config.publicUrl}/cases/${kase.id}/callbacks/${callbackRef}`;
    return {
      kind: "wait",
      wait: { kind: CALLBACK_WAIT, ref: callbackRef, expiresAt, timesOut: true },
      events: [
        dispatchEvent(kase, {
          nodeId: node.id,
          webhookKey: node.webhookKey,
          callbackUrl,
          expiresAt,
          payload,
        }),
      ],
    };
  },
  resume(node, resolution, wait) {
    if (resolution.kind === CALLBACK_WAIT)
      return { kind: "continue", next: node.next, output: resolution.output };
    const expiresAt = wait.expiresAt?.toISOString() ?? null;
    if (node.onTimeout === undefined) {
      return {
        kind: "fail",
        message: `node ${node.id}: no callback before ${expiresAt} and the node has no onTimeout`,
      };
    }
    return { kind: "continue", next: node.onTimeout, output: { timedOut: true, expiresAt } };
  },
  pending: () => ({ providerId: null, availableActions: [] }),
  describe(entry) {
    if (entry.status === "waiting") return ["sent external_callback.dispatch; waiting for the callback"];
    if (entry.status !== "completed") return describeEnd(entry);
    const timedOut = (entry.output as { timedOut?: unknown } | null)?.timedOut === true;
    return [`${timedOut ? "no callback came in time" : "the callback came"}: went on to ${entry.next}`];
  },
};
