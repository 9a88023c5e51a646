import type { SelectQueryBuilder } from "kysely";
import type { VNode } from "preact";
import type { App } from "../../platform/app-types.js";
import type { AppContext } from "../../platform/context.js";
import type { Database } from "../../platform/db/index.js";
import type { ConsoleLink } from "./console-link.js";
import type { PageContext } from "./views/layout.js";

export type { ConsoleLink };

// The console's part of the feature seam: a feature brings its own console pages (an entity's
// page, a settings page for its lists) with the links to them, and the console serves them in
// its scope (sessions, CSRF, error pages, security headers) without naming the feature. The
// feature renders with the console's layout, through the console's door.

/** What a feature brings to the console. */
export interface ConsoleSection {
  readonly links?: readonly ConsoleLink[];
  /** Its pages, registered in the console's scope under /console (paths relative to it). */
  routes?(scope: App, ctx: AppContext): void;
  /**
   * What it shows on a case page, in the side column: panels rendered for the case (the case is
   * the tenant's: the page checked it). Null when it has nothing to show.
   */
  casePanels?(ctx: AppContext, tenantId: string, caseId: string, view: CaseView): Promise<VNode | null>;
  /** The notices its case forms lead to (`?done=<key>` on the case page after a form post). */
  readonly caseNotices?: Readonly<Record<string, string>>;
  /** Like `casePanels`, in the main column, after the decision (a screening's hits beside the subject). */
  caseMainPanels?(ctx: AppContext, tenantId: string, caseId: string, view: CaseView): Promise<VNode | null>;
  /**
   * What the "All cases" search finds among what the feature keeps of cases (an identifier of
   * an entity): the ids of the tenant's cases matching the text, as a subquery.
   */
  searchCases?(ctx: AppContext, tenantId: string, text: string): CaseIdQuery;
}

/** What a case page's panels are drawn with: the page (its user, form token, refused form) and the actors' names. */
export interface CaseView {
  readonly page: PageContext;
  /** `analyst:<id>` and `apikey:<id>` to the names people know them by. */
  readonly names: ReadonlyMap<string, string>;
  /** The case is an operator's dry run: nothing is done on it from the console. */
  readonly dryRun: boolean;
  /** The page's user may act on the case: their own, nobody's, or any for an admin (`mayWork`). */
  readonly mayWork: boolean;
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
