import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";

/** The three-node rules workflow of the `cases` and `fairness` scenarios: amount, country, decision. */
export const threeNodeRules: WorkflowDefinition = {
  inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  start: "amount",
  nodes: [
    {
      id: "amount",
      type: "rules",
      rules: [{ when: "payload.amount > 10000", next: "review" }],
      default: "country",
    },
    {
      id: "country",
      type: "rules",
      rules: [{ when: "subject.person.nationality == 'KP'", next: "review" }],
      default: "approve",
    },
    { id: "approve", type: "decision", decision: "approved", output: { reason: "'screened'" } },
    { id: "review", type: "decision", decision: "in_review", output: { reason: "'manual review'" } },
  ],
};
