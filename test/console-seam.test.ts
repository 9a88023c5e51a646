import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAppContext } from "../src/context.js";
import { Layout, Panel, pageOf, sendPage } from "../src/modules/console/index.js";
import { featureModules } from "../src/modules/index.js";
import type { App, FeatureModule } from "../src/platform/app-types.js";
import { createLogger } from "../src/platform/logger.js";
import { buildCheckedApp, testConfig } from "./support/app.js";
import { ConsoleClient, signedIn } from "./support/console.js";
import { createTestDatabase, type TestDatabase } from "./support/db.js";
import { createTenant } from "./support/fixtures.js";

/**
 * A feature brings console pages through the seam (decision 0020): its links appear in the
 * navigation or among Settings' tabs for the roles that may open them, and its routes are served
 * in the console's scope (sign-in, permissions, error pages) without the console naming it.
 */
const probePages: FeatureModule = {
  name: "probe-pages",
  console: {
    links: [
      { href: "/console/probe", title: "Probe page", permission: "cases:read", place: "main" },
      {
        href: "/console/settings/probe",
        title: "Probe settings",
        permission: "users:manage",
        place: "settings",
      },
    ],
    routes(scope) {
      scope.get("/probe", { config: { console: { permission: "cases:read" } } }, (request, reply) =>
        sendPage(
          reply,
          Layout({
            page: pageOf(request, reply),
            title: "Probe",
            children: Panel({ title: "Probed", children: "A page of the probe feature." }),
          }),
        ),
      );
    },
  },
};

let database: TestDatabase;
let app: App;

beforeAll(async () => {
  database = await createTestDatabase();
  const config = testConfig();
  const ctx = createAppContext({ config, db: database.db, log: createLogger("silent") }, [
    ...featureModules,
    probePages,
  ]);
  app = await buildCheckedApp(ctx);
  await app.ready();
});

afterAll(async () => {
  await app.close();
  await database.drop();
});

describe("a feature's console pages", () => {
  it("are linked for the roles that may open them, and served in the console's scope", async () => {
    const tenantId = await createTenant(app);
    const admin = await signedIn(app, tenantId, "admin");
    const viewer = await signedIn(app, tenantId, "viewer");

    const page = await admin.browser.get("/console/probe");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("A page of the probe feature.");
    expect(page.body).toMatch(/<a href="\/console\/probe" aria-current="page">Probe page<\/a>/);

    const settings = await admin.browser.get("/console/settings/users");
    expect(settings.body).toContain('<a href="/console/settings/probe">Probe settings</a>');
    const queue = await viewer.browser.get("/console/queue");
    expect(queue.body).toContain('<a href="/console/probe">Probe page</a>');
    expect(queue.body).not.toContain("Probe settings");

    // The console's scope guards the feature's page like its own.
    const anonymous = await new ConsoleClient(app).get("/console/probe");
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe("/console/sign-in?next=%2Fconsole%2Fprobe");
  });

  it("are absent from a process without the feature", async () => {
    const database2 = await createTestDatabase();
    const ctx = createAppContext({ config: testConfig(), db: database2.db, log: createLogger("silent") });
    const plain = await buildCheckedApp(ctx);
    try {
      const tenantId = await createTenant(plain);
      const admin = await signedIn(plain, tenantId, "admin");
      expect((await admin.browser.get("/console/probe")).statusCode).toBe(404);
      expect((await admin.browser.get("/console/queue")).body).not.toContain("Probe page");
    } finally {
      await plain.close();
      await database2.drop();
    }
  });
});
