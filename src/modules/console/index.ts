import { feature } from "../../platform/app-types.js";
import { allCasesRoutes } from "./all-cases.routes.js";
import { FAVICON } from "./assets.js";
import { auditRoutes } from "./audit.routes.js";
import { authRoutes } from "./auth.routes.js";
import { caseRoutes } from "./case.routes.js";
import { consoleScope } from "./console.plugin.js";
import { queueRoutes } from "./queue.routes.js";
import { reviewSettingsRoutes } from "./review-settings.routes.js";
import { settingsRoutes } from "./settings.routes.js";

/** The console at /console: the screens of a tenant's analysts and admins (contract section 6). */
export const consoleModule = feature("console", {
  routes: (app, ctx) => {
    // The service's front door leads to the console (contract section 6): the console is always on.
    app.get("/", { schema: { hide: true } }, (_request, reply) => reply.redirect("/console", 302));
    app.get("/favicon.ico", { schema: { hide: true } }, (_request, reply) =>
      reply.type("image/svg+xml").header("cache-control", "public, max-age=86400").send(FAVICON),
    );
    return consoleScope(app, ctx, (scope) => {
      authRoutes(scope, ctx);
      queueRoutes(scope, ctx);
      allCasesRoutes(scope, ctx);
      caseRoutes(scope, ctx);
      auditRoutes(scope, ctx);
      settingsRoutes(scope, ctx);
      reviewSettingsRoutes(scope, ctx);
      for (const section of ctx.console.sections) section.routes?.(scope, ctx);
    });
  },
});

export {
  /** The signed-in user as the cases module's `Worker` (who acts, and whether for others). */
  workerOf,
} from "./all-cases.routes.js";
export {
  /** What a case page says above its panels: a notice, a refused form, an action's result. */
  type CasePageOptions,
  /** Sends the case page of the signed-in user's tenant (404 for another tenant's case). */
  sendCasePage,
} from "./case.routes.js";
export {
  /** The page context of a request: the session, the form token, the path, the links. */
  pageOf,
  /** After a form post, a 303 to the page the browser then loads with GET. */
  seeOther,
  /** Sends a rendered page (HTML, status 200 unless said). */
  sendPage,
  /** The signed-in user of a route that requires one. */
  sessionOf,
} from "./console.plugin.js";
// What a feature's console pages are built with (see console.seam.ts).
export {
  /** What a feature's case panels are drawn with: the page and the actors' names. */
  type CaseView,
  /** A link to a feature's console page, in the main navigation or as a Settings tab. */
  type ConsoleLink,
  /** What a feature brings to the console: its links and its page routes. */
  type ConsoleSection,
  /** The console seam of a list of features (made once per process by createAppContext). */
  consoleSeamOf,
} from "./console.seam.js";
export {
  /** A posted form's values (`text` trimmed, `raw` as sent, `list` for repeated names). */
  formOf,
} from "./form.js";
export {
  /** A form post of a settings page: acts for the signed-in user, then sends the browser back. */
  settingsAction,
} from "./settings.routes.js";
export {
  /** The last column of a table, whose cells hold a row's buttons. */
  ACTIONS,
  /** `analyst:<userId>` shown as the user's name where it is known. */
  ActorName,
  /** A status or verdict as a coloured badge. */
  Badge,
  /** A table of rows, or a line saying there are none. */
  DataTable,
  /** A labelled form field: the label's text, an optional hint, then the control. */
  Field,
  /** Nested JSON as a list of dotted paths and their values. */
  Fields,
  /** A table cell holding an id (or its start) as a link to its page. */
  LinkCell,
  /** A value's underscores as spaces (`no_match` → `no match`). */
  label,
  /** The options of a select, each value shown as it is, one of them chosen. */
  Options,
  /** A titled section of a page. */
  Panel,
  /** A form's main button. */
  SubmitButton,
  /** A timestamp as the console shows it (a dash when there is none). */
  Time,
} from "./views/components.js";
export {
  /** The hidden form field with the CSRF token that every form post carries. */
  Csrf,
  /** The problem of one field of a refused form, beside the field. */
  FieldError,
  /** What a refused form could not place beside a field, at the top of the form. */
  FormError,
  /** A labelled field of a form, with its problem beside it when the form was refused. */
  FormField,
  /** The value a field of a refused form keeps, else its default. */
  kept,
  /** The page frame: head, top bar, navigation, main. */
  Layout,
  /** A notice above a page's content (ok, error, info). */
  Notice,
  /** What every page knows: who is signed in, the form token, where it is, the links. */
  type PageContext,
} from "./views/layout.js";
export {
  /** The red Delete button of a row, which asks for confirmation first. */
  DeleteButton,
  /** A panel holding one form that posts to its action, with the CSRF token. */
  FormPanel,
  /** A one-button form that posts to its action (with the CSRF token and hidden fields). */
  PostButton,
  /** A settings page's frame: the Settings heading, its tabs (the features' too), a notice. */
  SettingsLayout,
} from "./views/settings/layout.js";
