import { expect, it } from "vitest";
import { generateKeyValue } from "../../src/modules/auth/api-key-format.js";
import { SCOPES, type Scope } from "../../src/modules/auth/scopes.js";
import type { TestApp } from "./app.js";
import { createKey, createPartner, createTenant, type Partner } from "./fixtures.js";

export interface SecuredRequest {
  method: "GET" | "POST" | "PUT" | "DELETE";
  url: string;
  payload?: unknown;
}

export interface SecuredEndpoint {
  /** The scope the endpoint requires. */
  scope: Scope;
  /** A valid request for a resource owned by `owner` (creating the resource as needed). */
  request(harness: TestApp, owner: Partner): Promise<SecuredRequest>;
  /** False for endpoints that name no resource of a tenant (nothing to be another tenant's). */
  ownsResource?: boolean;
}

/**
 * The same four security tests for every partner endpoint: no key 401, wrong key 401, missing
 * scope 403, another tenant's resource 404.
 */
export function securityTests(harness: () => TestApp, endpoint: SecuredEndpoint): void {
  it("answers 401 without an API key", async () => {
    const h = harness();
    const owner = await createPartner(h.app);
    const req = await endpoint.request(h, owner);
    const res = await h.app.inject({ method: req.method, url: req.url, payload: req.payload as never });
    expect(res.statusCode).toBe(401);
    expect(typeof res.json().error).toBe("string");
  });

  it("answers 401 with a wrong API key (unknown, malformed, or a bad checksum)", async () => {
    const h = harness();
    const owner = await createPartner(h.app);
    const req = await endpoint.request(h, owner);
    const unknown = generateKeyValue(h.ctx.config.env);
    const badChecksum = `${owner.key.slice(0, -1)}${owner.key.endsWith("A") ? "B" : "A"}`;
    for (const key of [unknown, "not-a-key", badChecksum]) {
      const res = await h.app.inject({
        method: req.method,
        url: req.url,
        payload: req.payload as never,
        headers: { "x-api-key": key },
      });
      expect(res.statusCode, key).toBe(401);
    }
  });

  it(`answers 403 to a key without the ${endpoint.scope} scope`, async () => {
    const h = harness();
    const owner = await createPartner(h.app);
    const req = await endpoint.request(h, owner);
    const others = await createKey(
      h.app,
      owner.tenantId,
      SCOPES.filter((s) => s !== endpoint.scope),
    );
    const res = await h.app.inject({
      method: req.method,
      url: req.url,
      payload: req.payload as never,
      headers: others.headers,
    });
    expect(res.statusCode).toBe(403);
    // RFIError bodies carry the code in `error` and the sentence in `message`.
    expect(res.json().message ?? res.json().error).toMatch(endpoint.scope);
  });

  if (endpoint.ownsResource !== false) {
    it("answers 404 for another tenant's resource", async () => {
      const h = harness();
      const owner = await createPartner(h.app);
      const req = await endpoint.request(h, owner);
      const stranger = await createKey(h.app, await createTenant(h.app, "Other Bank"));
      const res = await h.app.inject({
        method: req.method,
        url: req.url,
        payload: req.payload as never,
        headers: stranger.headers,
      });
      expect(res.statusCode).toBe(404);
    });
  }
}
