import type { NodeType, NodeTypes } from "./node-type.js";

// The workflow language's part of the feature seam: a feature lists the node types it brings,
// and every process gets the catalogue built from all features' lists in its context. The
// platform declares the seam and the context without naming any module; this adds to both.

declare module "../../platform/app-types.js" {
  interface FeatureModule {
    /** Node types of the workflow language this feature brings. */
    readonly nodeTypes?: readonly NodeType[];
  }
}

declare module "../../platform/context.js" {
  interface AppContext {
    /** Every node type of the features in this process (see `nodeTypesOf`). */
    readonly nodeTypes: NodeTypes;
  }
}

declare module "../../platform/cli/context.js" {
  interface CliContext {
    /** The node types the CLI describes traces and prints the definition schema with. */
    readonly nodeTypes: NodeTypes;
  }
}
