import {
  describeEnd,
  fieldReferences,
  type NodeType,
  schemaRef,
} from "../../src/modules/workflows/node-type.js";
import type { FeatureModule } from "../../src/platform/app-types.js";

interface CrashNode {
  id: string;
  type: "crash";
  next: string;
}

/**
 * A node type for tests that stands for a case whose run kills its process (a native crash, an
 * out-of-memory payload): when the case's payload has `crash: true`, evaluating it ends the
 * process at once with SIGKILL, before the step's transaction can commit. Otherwise it goes on
 * to `next`. Only the test feature below brings it; the service never has it.
 */
const crashNode: NodeType<CrashNode> = {
  type: "crash",
  effects: "none",
  definition: {
    description: "Test only: kills its own process when the payload has crash: true, else goes on to `next`.",
    required: ["next"],
    properties: { next: schemaRef("nodeRef") },
  },
  references: (node, at) => fieldReferences(node, at, ["next"]),
  expressions: () => [],
  compile: (node) => ({ id: node.id, type: "crash", next: node.next as string }),
  evaluate(node, input) {
    if ((input.vars.payload as { crash?: unknown }).crash === true) process.kill(process.pid, "SIGKILL");
    return { kind: "continue", next: node.next, output: {} };
  },
  describe: describeEnd,
};

/** A test feature bringing the crash node type. */
export const crashFeature: FeatureModule = { name: "crash", nodeTypes: [crashNode as unknown as NodeType] };
