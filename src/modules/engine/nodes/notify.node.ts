import type { NewEvent } from "../../webhooks/index.js";
import type { CompiledOutput } from "../../workflows/index.js";
import {
  compileOutput,
  describeEnd,
  fieldReferences,
  mapExpressions,
  type NodeCase,
  type NodeType,
  schemaRef,
} from "../../workflows/index.js";
import { nodeEvent } from "./node-event.js";

/** Emits `node.notification` with `output`, then goes on to `next`. */
export interface NotifyNode {
  id: string;
  type: "notify";
  payloadType: string | undefined;
  tag: string | undefined;
  webhookKey: string | undefined;
  output: CompiledOutput;
  next: string;
}

/** `node.notification`, in the spec's camelCase. */
export function notificationEvent(
  kase: NodeCase,
  input: {
    nodeId: string;
    payloadType: string | undefined;
    tag: string | undefined;
    webhookKey: string | undefined;
    output: unknown;
  },
): NewEvent {
  const head = {
    ...(input.payloadType === undefined ? {} : { payloadType: input.payloadType }),
    ...(input.tag === undefined ? {} : { tag: input.tag }),
  };
  const event = nodeEvent(kase, "node.notification", input, { output: input.output }, head);
  return { ...event, dryRun: kase.dryRun };
}

export const notifyNode: NodeType<NotifyNode> = {
  type: "notify",
  effects: "transaction",
  // Its event is written by the engine, which a backtest does not.
  replays: true,
  definition: {
    description: "Emits `node.notification` with `output`, then goes on to `next`.",
    required: ["output", "next"],
    properties: {
      payloadType: { type: "string", minLength: 1, maxLength: 128 },
      tag: { type: "string", minLength: 1, maxLength: 64 },
      webhookKey: schemaRef("webhookKey"),
      output: schemaRef("output"),
      next: schemaRef("nodeRef"),
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next"]),
  expressions: (node, at) => mapExpressions(node, at, "output"),
  compile(node) {
    return {
      id: node.id,
      type: "notify",
      payloadType: node.payloadType as string | undefined,
      tag: node.tag as string | undefined,
      webhookKey: node.webhookKey as string | undefined,
      output: compileOutput(node.id, node.output as Record<string, string>),
      next: node.next as string,
    };
  },
  evaluate(node, { vars, case: kase }) {
    const output = node.output.evaluate(vars);
    const event = notificationEvent(kase, { nodeId: node.id, ...node, output });
    return { kind: "continue", next: node.next, output, events: [event] };
  },
  describe(entry) {
    if (entry.status !== "completed") return describeEnd(entry);
    return [`sent node.notification: went on to ${entry.next}`];
  },
};
