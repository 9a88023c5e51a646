import { Ajv } from "ajv";
import type { AppContext } from "../../platform/context.js";
import { uuid } from "../../platform/crypto.js";
import type { Tx } from "../../platform/db/index.js";
import { addFormats } from "../../platform/http.js";
import { NodeTexts } from "./rfi.schemas.js";
import { requestMessage, storeRequest } from "./rfi.service.js";

/** An information request raised by a workflow node, with its texts already evaluated. */
export interface NodeRfiRequest {
  tenantId: string;
  caseId: string;
  caseType: string;
  dryRun: boolean;
  nodeId: string;
  to: string;
  subject: string;
  body: string;
  cc: string[] | undefined;
  templateId: string | undefined;
  webhookKey: string | undefined;
  awaitResponse: boolean;
  /** The answer deadline (set when awaiting). */
  expiresAt: Date | null;
}

/** A node whose evaluated texts break the rules an API caller is held to. */
export class NodeRfiError extends Error {
  constructor(
    readonly nodeId: string,
    message: string,
  ) {
    super(`information_request node ${nodeId}: ${message}`);
    this.name = "NodeRfiError";
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const checkTexts = ajv.compile(NodeTexts);

/**
 * Throws a NodeRfiError when the node's evaluated texts break the rules an API caller is held to
 * (an invalid address, an empty subject, …). The engine may call it while evaluating the node, to
 * fail the case before anything is written; `raiseRfiFromNode` calls it too.
 */
export function checkNodeRfiTexts(
  request: Pick<NodeRfiRequest, "nodeId" | "to" | "subject" | "body" | "cc" | "templateId" | "webhookKey">,
): void {
  const texts = {
    to: request.to,
    subject: request.subject,
    body: request.body,
    ...(request.cc !== undefined ? { cc: request.cc } : {}),
    ...(request.templateId !== undefined ? { templateId: request.templateId } : {}),
    ...(request.webhookKey !== undefined ? { webhookKey: request.webhookKey } : {}),
  };
  if (!checkTexts(texts)) {
    const problems = (checkTexts.errors ?? []).map(
      (e) => `${e.instancePath.slice(1) || "request"} ${e.message}`,
    );
    throw new NodeRfiError(request.nodeId, problems.join("; "));
  }
}

/**
 * Raises the request in the engine's transaction: stores it, emits `case.rfi_requested`
 * (`requested_by` `node:<nodeId>`, `source` `workflow`, plus `awaits_response` and
 * `response_expires_at` when awaiting) and schedules its expiry.
 *
 * Texts that an API caller could not send (an invalid address, an empty subject, …) throw a
 * NodeRfiError naming the node and the field, never the value: the texts are personal data.
 */
export async function raiseRfiFromNode(
  _ctx: AppContext,
  tx: Tx,
  request: NodeRfiRequest,
): Promise<{ rfiId: string }> {
  checkNodeRfiTexts(request);
  const row = await storeRequest(
    tx,
    {
      id: uuid(),
      tenantId: request.tenantId,
      caseId: request.caseId,
      source: "workflow",
      requestedBy: `node:${request.nodeId}`,
      nodeId: request.nodeId,
      ...requestMessage(request),
      awaitsResponse: request.awaitResponse,
      expiresAt: request.expiresAt,
    },
    { type: request.caseType, dryRun: request.dryRun },
  );
  return { rfiId: row.id };
}
