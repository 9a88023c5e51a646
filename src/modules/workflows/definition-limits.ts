import type { ErrorDetail } from "../../platform/errors.js";

/**
 * Hard limits on a workflow definition, checked at creation before anything else looks at it, so
 * that validating, compiling and running a definition stay bounded whatever its size (contract
 * section 4). Within them the full validation lists every problem; past them it does not run.
 */
export const DEFINITION_LIMITS = {
  nodes: 500,
  /** Levels of objects and arrays inside `inputSchema` (the schema object itself is level 1). */
  inputSchemaDepth: 32,
  /** The definition as JSON, in UTF-8 bytes. */
  bytes: 256 * 1024,
} as const;

function depthOf(root: unknown, stopAt: number): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value: root, depth: 1 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof value !== "object" || value === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > stopAt) return deepest;
    for (const child of Object.values(value)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

/** The limits the definition exceeds; empty when it is within all of them. */
export function checkDefinitionLimits(definition: unknown): ErrorDetail[] {
  if (typeof definition !== "object" || definition === null) return [];
  const problems: ErrorDetail[] = [];
  const bytes = Buffer.byteLength(JSON.stringify(definition));
  if (bytes > DEFINITION_LIMITS.bytes) {
    problems.push({
      path: "(root)",
      message: `is ${bytes} bytes as JSON; a definition has at most ${DEFINITION_LIMITS.bytes}`,
    });
  }
  const { nodes, inputSchema } = definition as { nodes?: unknown; inputSchema?: unknown };
  if (Array.isArray(nodes) && nodes.length > DEFINITION_LIMITS.nodes) {
    problems.push({
      path: "nodes",
      message: `has ${nodes.length} nodes; a definition has at most ${DEFINITION_LIMITS.nodes}`,
    });
  }
  if (depthOf(inputSchema, DEFINITION_LIMITS.inputSchemaDepth) > DEFINITION_LIMITS.inputSchemaDepth) {
    problems.push({
      path: "inputSchema",
      message: `is nested more than ${DEFINITION_LIMITS.inputSchemaDepth} levels deep`,
    });
  }
  return problems;
}
