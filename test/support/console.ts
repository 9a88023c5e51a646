import type { LightMyRequestResponse } from "fastify";
import type { App } from "../../src/platform/app-types.js";
import { adminHeaders } from "./fixtures.js";

type FormValues = Record<string, string | string[]>;

function encode(values: FormValues): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(values))
    for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
  return params.toString();
}

/** A browser's part over `app.inject`: it keeps cookies and reads each page's CSRF token. */
export class ConsoleClient {
  readonly cookies = new Map<string, string>();
  csrf = "";

  constructor(readonly app: App) {}

  private remember(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      if (c.value === "" || c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now()))
        this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    const token = /<meta name="csrf-token" content="([^"]+)"/.exec(res.body)?.[1];
    if (token) this.csrf = token;
    return res;
  }

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.remember(
      await this.app.inject({ method: "GET", url, headers: { cookie: this.cookieHeader() } }),
    );
  }

  /** Posts a form as the page would: with the token of the last page read, unless told otherwise. */
  async post(
    url: string,
    values: FormValues = {},
    options: { csrf?: boolean } = {},
  ): Promise<LightMyRequestResponse> {
    const body = options.csrf === false ? values : { _csrf: this.csrf, ...values };
    return this.remember(
      await this.app.inject({
        method: "POST",
        url,
        headers: { cookie: this.cookieHeader(), "content-type": "application/x-www-form-urlencoded" },
        payload: encode(body),
      }),
    );
  }

  async postJson(url: string, payload: unknown): Promise<LightMyRequestResponse> {
    return this.remember(
      await this.app.inject({
        method: "POST",
        url,
        headers: { cookie: this.cookieHeader(), "csrf-token": this.csrf },
        payload: payload as object,
      }),
    );
  }
}

export interface ConsoleUser {
  userId: string;
  email: string;
  password: string;
  setupUrl: string;
}

let counter = 0;

/** A user created through the operator API, with the password set through the setup link. */
export async function createConsoleUser(
  app: App,
  tenantId: string,
  role: "viewer" | "analyst" | "admin",
  options: { setPassword?: boolean; name?: string; email?: string } = {},
): Promise<ConsoleUser> {
  counter += 1;
  const email = options.email ?? `${role}.${counter}.${Date.now()}@example.com`;
  const res = await app.inject({
    method: "POST",
    url: `/admin/tenants/${tenantId}/users`,
    headers: adminHeaders,
    payload: { email, name: options.name ?? `${role[0]?.toUpperCase()}${role.slice(1)} ${counter}`, role },
  });
  if (res.statusCode !== 201) throw new Error(`creating a user answered ${res.statusCode}: ${res.body}`);
  const { userId, setupUrl } = res.json() as { userId: string; setupUrl: string };
  const password = `correct horse battery ${counter}`;
  if (options.setPassword !== false) {
    const browser = new ConsoleClient(app);
    const path = new URL(setupUrl).pathname + new URL(setupUrl).search;
    const page = await browser.get(path);
    if (page.statusCode !== 200) throw new Error(`the setup page answered ${page.statusCode}`);
    const token = new URL(setupUrl).searchParams.get("token") ?? "";
    const set = await browser.post("/console/setup", { token, password, confirm: password });
    if (set.statusCode !== 303)
      throw new Error(`setting the password answered ${set.statusCode}: ${set.body}`);
  }
  return { userId, email, password, setupUrl };
}

export async function signIn(app: App, user: ConsoleUser): Promise<ConsoleClient> {
  const browser = new ConsoleClient(app);
  await browser.get("/console/sign-in");
  const res = await browser.post("/console/sign-in", { email: user.email, password: user.password });
  if (res.statusCode !== 303) throw new Error(`signing in answered ${res.statusCode}: ${res.body}`);
  return browser;
}

/** A fresh user of the role, signed in. */
export async function signedIn(
  app: App,
  tenantId: string,
  role: "viewer" | "analyst" | "admin",
): Promise<{ browser: ConsoleClient; user: ConsoleUser }> {
  const user = await createConsoleUser(app, tenantId, role);
  return { browser: await signIn(app, user), user };
}
