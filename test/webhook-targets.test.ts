import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPrivateAddress } from "../src/modules/webhooks/target-safety.js";
import { createTestApp, type TestApp } from "./support/app.js";
import { adminHeaders, createTenant } from "./support/fixtures.js";
import { TEST_WEBHOOK_SECRET } from "./support/receiver.js";

/**
 * Contract section 2, "Webhooks": in production no webhook URL may reach a non-public address in
 * any spelling. Each spelling the attack got accepted at configuration is here.
 */

const SPELLINGS = {
  "IPv4-compatible loopback": "https://[::127.0.0.1]/hook",
  "IPv4-compatible private": "https://[::10.0.0.1]/hook",
  "IPv4-compatible metadata": "https://[::169.254.169.254]/hook",
  "6to4 of 127.0.0.1": "https://[2002:7f00:1::]/hook",
  "SIIT (IPv4-translated) loopback": "https://[::ffff:0:7f00:1]/hook",
  "Teredo with client 127.0.0.1": "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
  "NAT64 of 10.0.0.1": "https://[64:ff9b::a00:1]/hook",
  "local-use NAT64 of 192.168.0.1": "https://[64:ff9b:1::c0a8:1]/hook",
  "6to4 of 169.254.169.254": "https://[2002:a9fe:a9fe::1]/hook",
  "documentation IPv6": "https://[2001:db8::1]/hook",
  "shared address space": "https://100.64.0.1/hook",
  benchmarking: "https://198.18.0.1/hook",
  multicast: "https://224.0.0.251/hook",
  reserved: "https://240.0.0.1/hook",
  "hexadecimal loopback": "https://0x7f.1/hook",
  "decimal loopback": "https://2130706433/hook",
};

describe("isPrivateAddress", () => {
  it("judges IPv6 transition forms by the IPv4 address they reach", () => {
    for (const address of ["::ffff:808:808", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7"]) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
    for (const address of ["::a00:1", "2002:c0a8:101::1", "::ffff:0:a9fe:a9fe", "64:ff9b::7f00:1"]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
  });
});

describe("webhook URLs in production (CDS_ALLOW_PRIVATE_TARGETS off)", () => {
  let h: TestApp;
  let tenantId: string;
  beforeAll(async () => {
    h = await createTestApp({ allowPrivateTargets: false, env: "production" });
    tenantId = await createTenant(h.app);
  });
  afterAll(async () => h?.close());

  it.each(Object.entries(SPELLINGS))("refuses %s at configuration", async (_name, url) => {
    const res = await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${tenantId}/webhooks/default`,
      headers: adminHeaders,
      payload: {
        url,
        secrets: [{ id: "s1", secret: TEST_WEBHOOK_SECRET }],
        activeSecretId: "s1",
      },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toEqual([
      { path: "url", message: expect.stringMatching(/non-public address/) },
    ]);
  });

  it("accepts a public IPv6 address", async () => {
    const res = await h.app.inject({
      method: "PUT",
      url: `/admin/tenants/${tenantId}/webhooks/default`,
      headers: adminHeaders,
      payload: {
        url: "https://[2606:4700:4700::1111]/hook",
        secrets: [{ id: "s1", secret: TEST_WEBHOOK_SECRET }],
        activeSecretId: "s1",
      },
    });
    expect(res.statusCode, res.body).toBe(200);
  });
});
