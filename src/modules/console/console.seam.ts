import type { SelectQueryBuilder } from "kysely";
import type { VNode } from "preact";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import type { Database } from "../../platform/db/index.js";
import type { Permission } from "../users/index.js";

// The console's part of the feature seam: a feature brings its own console pages (an entity's
// page, a settings page for its lists) with the links to them, and the console serves them in
// its scope (sessions, CSRF, error pages, security headers) without naming the feature. The
// feature renders with the console's layout, through the console's door.

/** A link to a feature's page: in the main navigation, or as a tab of Settings. */
export interface ConsoleLink {
  readonly href: string;
  readonly title: string;
  /** Shown only to roles with this permission (the route checks it again). */
  readonly permission: Permission;
  readonly place: "main" | "settings";
}

/** What a feature brings to the console. */
export interface ConsoleSection {
  readonly links?: readonly ConsoleLink[];
  /** Its pages, registered in the console's scope under /console (paths relative to it). */
  routes?(scope: App, ctx: AppContext): void;
  /**
   * What it shows on a case page, in the side column: panels rendered for the case (the case is
   * the tenant's: the page checked it). Null when it has nothing to show.
   */
  casePanels?(ctx: AppContext, tenantId: string, caseId: string): Promise<VNode | null>;
  /**
   * What the "All cases" search finds among what the feature keeps of cases (an identifier of
   * an entity): the ids of the tenant's cases matching the text, as a subquery.
   */
  searchCases?(ctx: AppContext, tenantId: string, text: string): CaseIdQuery;
}

/** A subquery of case ids, written by the module that owns what it reads. */
export type CaseIdQuery = SelectQueryBuilder<Database, keyof Database, { case_id: string }>;

/** The console's part of a process's context: every feature's section, and their links in order. */
export interface ConsoleSeam {
  readonly sections: readonly ConsoleSection[];
  readonly links: readonly ConsoleLink[];
}

declare module "../../platform/app-types.js" {
  interface FeatureModule {
    /** The console pages this feature brings, and the links to them. */
    readonly console?: ConsoleSection;
  }
}

declare module "../../platform/context.js" {
  interface AppContext {
    /** The console sections of the features in this process. */
    readonly console: ConsoleSeam;
  }
}

/** The console seam of a list of features, in their order. */
export function consoleSeamOf(features: readonly { readonly console?: ConsoleSection }[]): ConsoleSeam {
  const sections = features.flatMap((f) => (f.console ? [f.console] : []));
  return { sections, links: sections.flatMap((s) => s.links ?? []) };
}
