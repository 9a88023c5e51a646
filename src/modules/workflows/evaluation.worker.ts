/**
 * The script of an evaluation thread (evaluation-threads.ts): it evaluates one expression, or
 * validates one payload against an input schema, per message, and answers with the result.
 */
import { parentPort } from "node:worker_threads";
import { threadReady } from "../../platform/thread-pool.js";
import type { ThreadTask } from "./evaluation-threads.js";
import { validateTask } from "./json-schema.js";
import { evaluateTask } from "./workflow.expressions.js";

const port = parentPort;
if (!port) throw new Error("evaluation.worker runs as a worker thread");
port.on("message", (task: ThreadTask) => {
  port.postMessage(task.type === "schema" ? validateTask(task) : evaluateTask(task));
});
// A first evaluation and validation compile what they use, so that the first real task's
// deadline is not spent on that.
evaluateTask({
  kind: "condition",
  source: "[1, 2, 3].all(x, x > 0) && 'ab'.matches('^a') && size(payload) == 0",
  budget: 1_000,
  variables: {
    payload: {},
    subject: {},
    metadata: {},
    case: { id: "", type: "", externalCustomerId: null },
    customer: { attributes: {} },
    nodes: {},
  },
  answers: [],
});
validateTask({
  version: "",
  schema: { type: "object", properties: { s: { type: "string", pattern: "^a" } } },
  payload: { s: "a" },
});
threadReady(port);
