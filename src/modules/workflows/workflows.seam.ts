import type { Executor } from "../../platform/db/index.js";
import type { NodeType, NodeTypes } from "./node-type.js";

/** One `inList` question: is this value in the tenant's list? */
export interface ListProbe {
  list: string;
  value: string;
}

/**
 * Where `inList(list, value)` in expressions is answered: the tenant's named lists, brought by
 * the feature that keeps them (at most one feature in a process).
 */
export interface ListSource {
  /**
   * For each probe, whether the value (normalised as its list says) is in the tenant's list;
   * undefined for a list the tenant does not have. Read in the caller's transaction, so a change
   * to a list applies to every step that starts after it commits.
   */
  contains(db: Executor, tenantId: string, probes: readonly ListProbe[]): Promise<Array<boolean | undefined>>;
  /** Of these list ids, those the tenant has no list of. */
  unknown(db: Executor, tenantId: string, listIds: readonly string[]): Promise<string[]>;
}

// The workflow language's part of the feature seam: a feature lists the node types it brings,
// and every process gets the catalogue built from all features' lists in its context. The
// platform declares the seam and the context without naming any module; this adds to both.

declare module "../../platform/app-types.js" {
  interface FeatureModule {
    /** Node types of the workflow language this feature brings. */
    readonly nodeTypes?: readonly NodeType[];
    /** The tenant's named lists, which expressions read with `inList`. */
    readonly listSource?: ListSource;
  }
}

declare module "../../platform/context.js" {
  interface AppContext {
    /** Every node type of the features in this process (see `nodeTypesOf`). */
    readonly nodeTypes: NodeTypes;
    /** The lists `inList` reads, when a feature of this process keeps them. */
    readonly lists: ListSource | undefined;
  }
}

/** The one list source among a process's features (undefined when none brings one). */
export function listSourceOf(
  features: readonly { listSource?: ListSource; name: string }[],
): ListSource | undefined {
  const sources = features.filter((f) => f.listSource);
  if (sources.length > 1) throw new Error(`lists are brought by ${sources.map((f) => f.name).join(" and ")}`);
  return sources[0]?.listSource;
}

declare module "../../platform/cli/context.js" {
  interface CliContext {
    /** The node types the CLI describes traces and prints the definition schema with. */
    readonly nodeTypes: NodeTypes;
  }
}
