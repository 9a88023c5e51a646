import { expect } from "vitest";
import type { WorkflowDefinition } from "../../src/modules/workflows/workflow.types.js";
import type { App } from "../../src/platform/app-types.js";
import { adminHeaders } from "./fixtures.js";

/** An aggregate node `velocity` with these figures, then a decision: over 1000 in review, else approved. */
export function velocityWorkflow(aggregates: Record<string, Record<string, unknown>>): WorkflowDefinition {
  return {
    inputSchema: { type: "object" },
    start: "velocity",
    nodes: [
      { id: "velocity", type: "aggregate", next: "screen", aggregates },
      {
        id: "screen",
        type: "rules",
        rules: [{ when: "double(subject.transaction.amount) > 1000.0", next: "review" }],
        default: "approve",
      },
      { id: "approve", type: "decision", decision: "approved" },
      { id: "review", type: "decision", decision: "in_review" },
    ],
  };
}

/** The figures the case's `velocity` node computed, from its trace. */
export async function traceFigures(app: App, caseId: string): Promise<Record<string, number | null>> {
  const res = await app.inject({ url: `/admin/cases/${caseId}`, headers: adminHeaders });
  expect(res.statusCode, res.body).toBe(200);
  const entry = res.json().trace.find((e: { nodeId: string }) => e.nodeId === "velocity");
  expect(entry?.status, JSON.stringify(entry)).toBe("completed");
  return entry.output;
}
