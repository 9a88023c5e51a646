import { createHmac } from "node:crypto";
import { signWebhookBody, verifyWebhook } from "@case-decisioning/verify-webhook";
import { describe, expect, it } from "vitest";
import { verifyWebhook as fromPackage } from "../src/index.js";

const body =
  '{"webhookId":"4f7f0a8e-7f59-4a55-8a36-0e6ad3f2b0c1","event_type":"case.decided","case_id":"c-1"}';
const current = "whsec_current_0123456789abcdef";
const previous = "whsec_previous_0123456789abcde";
const sign = (secret: string, bytes: string | Buffer = body) =>
  createHmac("sha256", secret).update(bytes).digest("hex");

describe("verifyWebhook", () => {
  it("is what the package exports", () => {
    expect(fromPackage).toBe(verifyWebhook);
  });

  it("accepts the HMAC-SHA256 of the raw body as a string or bytes, with one secret or a rotation set", () => {
    const headers = { "x-service-signature": sign(current), "x-service-secret-id": "2025-06" };
    expect(verifyWebhook({ body, headers, secrets: current })).toBe(true);
    expect(verifyWebhook({ body: Buffer.from(body), headers, secrets: current })).toBe(true);
    expect(verifyWebhook({ body: new TextEncoder().encode(body), headers, secrets: current })).toBe(true);
    expect(verifyWebhook({ body, headers, secrets: { "2025-01": previous, "2025-06": current } })).toBe(true);
    expect(
      verifyWebhook({
        body,
        headers,
        secrets: [
          { id: "2025-01", secret: previous },
          { id: "2025-06", secret: current },
        ],
      }),
    ).toBe(true);
    expect(signWebhookBody(current, body)).toBe(sign(current));
  });

  it("reads headers case-insensitively from Node's headers or a Fetch Headers", () => {
    const fetchHeaders = new Headers({
      "X-Service-Signature": sign(current),
      "X-Service-Secret-ID": "2025-06",
    });
    expect(verifyWebhook({ body, headers: fetchHeaders, secrets: { "2025-06": current } })).toBe(true);
    expect(
      verifyWebhook({ body, headers: { "X-Service-Signature": [sign(current)] }, secrets: current }),
    ).toBe(true);
    expect(
      verifyWebhook({
        body,
        headers: { "x-service-signature": sign(current).toUpperCase() },
        secrets: current,
      }),
    ).toBe(true);
  });

  it("still finds the right secret when the secret id is unknown to the receiver or absent", () => {
    const set = { old: previous, new: current };
    expect(
      verifyWebhook({
        body,
        headers: { "x-service-signature": sign(previous), "x-service-secret-id": "zzz" },
        secrets: set,
      }),
    ).toBe(true);
    expect(verifyWebhook({ body, headers: { "x-service-signature": sign(previous) }, secrets: set })).toBe(
      true,
    );
  });

  it("refuses a changed body, a wrong secret, a missing or malformed signature", () => {
    const headers = { "x-service-signature": sign(current) };
    expect(verifyWebhook({ body: body.replace("c-1", "c-2"), headers, secrets: current })).toBe(false);
    expect(verifyWebhook({ body: `${body}\n`, headers, secrets: current })).toBe(false);
    expect(verifyWebhook({ body, headers, secrets: previous })).toBe(false);
    expect(verifyWebhook({ body, headers: {}, secrets: current })).toBe(false);
    expect(verifyWebhook({ body, headers: { "x-service-signature": "abc" }, secrets: current })).toBe(false);
    expect(
      verifyWebhook({ body, headers: { "x-service-signature": `${sign(current)}00` }, secrets: current }),
    ).toBe(false);
    expect(verifyWebhook({ body, headers, secrets: {} })).toBe(false);
  });

  it("refuses a parsed body with an error that says to pass the raw one", () => {
    const parsed = JSON.parse(body);
    expect(() =>
      verifyWebhook({ body: parsed, headers: { "x-service-signature": sign(current) }, secrets: current }),
    ).toThrow(/raw request body/);
    // Re-serializing can change the bytes, which is why the raw body is required.
    const reserialized = JSON.stringify(JSON.parse('{"a": 1.0, "b": "\\u00e9"}'));
    expect(
      verifyWebhook({
        body: reserialized,
        headers: { "x-service-signature": sign(current, '{"a": 1.0, "b": "\\u00e9"}') },
        secrets: current,
      }),
    ).toBe(false);
  });
});
