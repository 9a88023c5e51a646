import { featureModules } from "../../src/modules/index.js";
import {
  describeEnd,
  fieldReferences,
  type NodeType,
  schemaRef,
} from "../../src/modules/workflows/node-type.js";
import type { FeatureModule } from "../../src/platform/app-types.js";

interface ProbeNode {
  id: string;
  type: "probe";
  next: string;
}

/**
 * A node type with `external` effects for tests: its call stands for a vendor's API (it counts
 * its calls and answers after a millisecond), so that a workflow has a step that runs outside
 * the case lock, as a provider node does.
 */
export const probeNode: NodeType<ProbeNode> = {
  type: "probe",
  effects: "external",
  definition: {
    description: "Test only: calls nothing outside, then goes on to `next` with the call's result.",
    required: ["next"],
    properties: { next: schemaRef("nodeRef") },
  },
  references: (node, at) => fieldReferences(node, at, ["next"]),
  expressions: () => [],
  compile: (node) => ({ id: node.id, type: "probe", next: node.next as string }),
  async call(_node, input) {
    probeCalls.push(input.case.id);
    await new Promise((resolve) => setTimeout(resolve, 1));
    return { probed: input.seq };
  },
  evaluate: (node, input) => ({ kind: "continue", next: node.next, output: input.called }),
  describe: describeEnd,
};

/** The cases the probe was called for, in this process. */
export const probeCalls: string[] = [];

/** The service's features and a test feature bringing the probe node type. */
export const featuresWithProbe: readonly FeatureModule[] = [
  ...featureModules,
  { name: "probe", nodeTypes: [probeNode as unknown as NodeType] },
];
