/**
 * The script of the webhook sending thread (sender-thread.ts): each message is a batch of
 * attempts, each signed and sent at once; their outcomes go back in batches of what finished in
 * one turn of this thread's event loop.
 */
import { parentPort } from "node:worker_threads";
import { SECRET_ID_HEADER, SIGNATURE_HEADER, signWebhookBody } from "@case-decisioning/verify-webhook";
import { THREAD_READY } from "../../platform/thread-pool.js";
import { sendWebhook, unanswered } from "./http-sender.js";
import type { SendMessage, SentMessage } from "./sender-thread.js";

const USER_AGENT = "case-decisioning-webhooks/1.0";

if (!parentPort) throw new Error("sender.worker runs as a worker thread");
const port = parentPort;

let outbox: SentMessage[] = [];
function answer(sent: SentMessage): void {
  outbox.push(sent);
  if (outbox.length === 1) {
    setImmediate(() => {
      const batch = outbox;
      outbox = [];
      port.postMessage(batch);
    });
  }
}

async function attempt(m: SendMessage): Promise<void> {
  const body = Buffer.from(m.body, "utf8");
  const outcome = await sendWebhook({
    url: new URL(m.href),
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      [SIGNATURE_HEADER]: signWebhookBody(m.secret, body),
      ...(m.secretId === null ? {} : { [SECRET_ID_HEADER]: m.secretId }),
    },
    timeoutMs: m.timeoutMs,
    allowPrivateTargets: m.allowPrivateTargets,
  });
  answer({ id: m.id, outcome });
}

port.on("message", (batch: SendMessage[]) => {
  for (const m of batch) {
    attempt(m).catch((err: Error) =>
      answer({ id: m.id, outcome: unanswered(`the attempt could not be made: ${err.message}`, 0) }),
    );
  }
});
port.postMessage(THREAD_READY);
