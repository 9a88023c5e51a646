import type { ErrorDetail } from "../../platform/errors.js";
import type { CompiledExpression } from "../workflows/index.js";
import {
  compileText,
  describeEnd,
  fieldReferences,
  isJsonObject,
  LIMITS,
  type NodeExpression,
  type NodeOutcome,
  type NodeReplay,
  type NodeType,
  ReplayNeedsInput,
  schemaRef,
} from "../workflows/index.js";
import { RFI_WAIT } from "./rfi.limits.js";
import { checkNodeRfiTexts, NodeRfiError, raiseRfiFromNode } from "./rfi.node.js";

export { RFI_WAIT };

/** Raises an information request; with `awaitResponse` pauses until it is answered, cancelled or expires. */
export interface InformationRequestNode {
  id: string;
  type: "information_request";
  to: CompiledExpression;
  subject: CompiledExpression;
  body: CompiledExpression;
  cc: string[] | undefined;
  templateId: string | undefined;
  webhookKey: string | undefined;
  awaitResponse: boolean;
  /** The answer deadline; required with `awaitResponse`. */
  expiresInSeconds: number | undefined;
  next: string;
  onExpired: string | undefined;
  onCancelled: string | undefined;
}

/** The kind of the waits of this node type; they are found again by the request's id. */

/** How a request a node waits on ended: the resolution `resumeWait` is given. */
export type RfiOutcome = "answered" | "expired" | "cancelled";

/**
 * A backtest's request: its texts checked as a live one's are, nothing raised. The request the
 * case raised is the one a wait resumes with the answer the case recorded; a node that waits for
 * an answer the case never had needs an input.
 */
function replayRequest(
  node: InformationRequestNode,
  texts: { to: string; subject: string; body: string },
  replay: NodeReplay,
): NodeOutcome {
  try {
    checkNodeRfiTexts({
      nodeId: node.id,
      ...texts,
      cc: node.cc,
      templateId: node.templateId,
      webhookKey: node.webhookKey,
    });
  } catch (err) {
    if (err instanceof NodeRfiError) return { kind: "fail", message: err.message };
    throw err;
  }
  // The request the case raised: the one its wait awaited, or (not awaited) its step's output.
  const recorded = replay.step?.output;
  const rfiId =
    replay.step?.wait?.ref ??
    (isJsonObject(recorded) && typeof recorded.rfiId === "string" ? recorded.rfiId : null);
  if (!node.awaitResponse) return { kind: "continue", next: node.next, output: { rfiId, status: "pending" } };
  if (rfiId === null || !replay.step?.wait) throw new ReplayNeedsInput(node.id);
  return {
    kind: "wait",
    wait: { kind: RFI_WAIT, ref: rfiId, expiresAt: replay.step.wait.expiresAt, timesOut: false },
    output: { rfiId },
  };
}

export const informationRequestNode: NodeType<InformationRequestNode> = {
  type: "information_request",
  effects: "transaction",
  replays: true,
  definition: {
    description:
      "Raises an information request; with `awaitResponse` pauses until it is answered, cancelled or expires.",
    required: ["to", "subject", "body", "next"],
    properties: {
      to: schemaRef("expression"),
      subject: schemaRef("expression"),
      body: schemaRef("expression"),
      cc: { type: "array", maxItems: LIMITS.cc, items: { type: "string", format: "email" } },
      templateId: { type: "string", minLength: 1, maxLength: 200 },
      webhookKey: schemaRef("webhookKey"),
      awaitResponse: { type: "boolean", default: false },
      expiresInSeconds: schemaRef("expiresInSeconds"),
      next: schemaRef("nodeRef"),
      onExpired: schemaRef("nodeRef"),
      onCancelled: schemaRef("nodeRef"),
    },
  },
  references: (node, at) => fieldReferences(node, at, ["next", "onExpired", "onCancelled"]),
  expressions(node, at) {
    const found: NodeExpression[] = [];
    for (const field of ["to", "subject", "body"]) {
      const source = node[field];
      if (typeof source === "string" && source.trim() !== "")
        found.push({ path: `${at}.${field}`, source, kind: "string" });
    }
    return found;
  },
  check(node, at, problems: ErrorDetail[]) {
    if (node.awaitResponse === true) {
      if (node.expiresInSeconds === undefined) {
        problems.push({ path: `${at}.expiresInSeconds`, message: "is required when awaitResponse is true" });
      }
      return;
    }
    for (const field of ["onExpired", "onCancelled"]) {
      if (node[field] !== undefined) {
        problems.push({ path: `${at}.${field}`, message: "is only taken when awaitResponse is true" });
      }
    }
  },
  compile(node) {
    return {
      id: node.id,
      type: "information_request",
      to: compileText(node.id, node.to as string),
      subject: compileText(node.id, node.subject as string),
      body: compileText(node.id, node.body as string),
      cc: node.cc as string[] | undefined,
      templateId: node.templateId as string | undefined,
      webhookKey: node.webhookKey as string | undefined,
      awaitResponse: node.awaitResponse === true,
      expiresInSeconds: node.expiresInSeconds as number | undefined,
      next: node.next as string,
      onExpired: node.onExpired as string | undefined,
      onCancelled: node.onCancelled as string | undefined,
    };
  },
  async evaluate(node, { ctx, tx, vars, case: kase, replay }) {
    const texts = {
      to: node.to.evaluate(vars) as string,
      subject: node.subject.evaluate(vars) as string,
      body: node.body.evaluate(vars) as string,
    };
    if (replay) return replayRequest(node, texts, replay);
    const expiresAt =
      node.awaitResponse && node.expiresInSeconds !== undefined
        ? new Date(Date.now() + node.expiresInSeconds * 1000)
        : null;
    let rfiId: string;
    try {
      ({ rfiId } = await raiseRfiFromNode(ctx, tx, {
        tenantId: kase.tenantId,
        caseId: kase.id,
        caseType: kase.type,
        dryRun: kase.dryRun,
        nodeId: node.id,
        ...texts,
        cc: node.cc,
        templateId: node.templateId,
        webhookKey: node.webhookKey,
        awaitResponse: node.awaitResponse,
        expiresAt,
      }));
    } catch (err) {
      // Texts a partner could not send fail the case, naming the field, never the value.
      if (err instanceof NodeRfiError) return { kind: "fail", message: err.message };
      throw err;
    }
    if (!node.awaitResponse)
      return { kind: "continue", next: node.next, output: { rfiId, status: "pending" } };
    return {
      kind: "wait",
      wait: { kind: RFI_WAIT, ref: rfiId, expiresAt, timesOut: false },
      output: { rfiId },
    };
  },
  resume(node, resolution) {
    const outcome = resolution.kind as RfiOutcome;
    const next = { answered: node.next, expired: node.onExpired, cancelled: node.onCancelled }[outcome];
    if (next === undefined) {
      const field = outcome === "expired" ? "onExpired" : "onCancelled";
      return {
        kind: "fail",
        message: `node ${node.id}: the information request was ${outcome} and the node has no ${field}`,
        output: resolution.output,
      };
    }
    return { kind: "continue", next, output: resolution.output };
  },
  describe(entry) {
    const status = (entry.output as { status?: unknown } | null)?.status;
    if (entry.status === "waiting") return ["raised an information request; waiting for the answer"];
    if (entry.status !== "completed") return describeEnd(entry);
    if (status === "pending") return [`raised an information request: went on to ${entry.next}`];
    return [`the information request was ${status}: went on to ${entry.next}`];
  },
};
