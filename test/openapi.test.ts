import { Ajv } from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addFormats } from "../src/platform/http.js";
import { createTestApp, type TestApp } from "./support/app.js";

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  responses: Record<
    string,
    { content?: Record<string, { schema?: unknown }>; headers?: Record<string, unknown> }
  >;
}
interface Document {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<
    string,
    { post: Operation & { requestBody: { content: Record<string, { schema: unknown }> } } }
  >;
  components: { schemas: Record<string, { examples?: unknown[]; properties?: Record<string, unknown> }> };
}

let h: TestApp;
let doc: Document;
beforeAll(async () => {
  h = await createTestApp({ publicUrl: "https://cds.example.com" });
  doc = (await h.app.inject({ url: "/openapi.json" })).json();
});
afterAll(async () => {
  await h.close();
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, path, op })),
  );

describe("the OpenAPI document", () => {
  it("names this deployment as its server", () => {
    expect(doc.servers).toEqual([{ url: "https://cds.example.com", description: "This deployment" }]);
  });

  it("gives every operation a unique operationId, tags, a summary and a description", () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { name, op } of operations()) {
      expect(op.tags?.length, name).toBeGreaterThan(0);
      expect(op.summary, name).toBeTruthy();
      expect(op.description, name).toBeTruthy();
      expect(op.security, name).toBeDefined();
    }
  });

  it("documents the errors every partner operation can answer, with X-Request-Id on every response", () => {
    for (const { name, path, op } of operations()) {
      const scope = op.security?.[0]?.apiKey?.[0];
      if (scope) {
        for (const status of ["401", "403", "429"])
          expect(op.responses[status], `${name} ${status}`).toBeDefined();
        expect(op.responses["429"]?.headers?.["Retry-After"], name).toBeDefined();
        expect(op.description, name).toContain(`Scope: \`${scope}\`.`);
      }
      if (path.includes("{")) expect(op.responses["404"], `${name} 404`).toBeDefined();
      for (const [status, response] of Object.entries(op.responses)) {
        expect(response.headers?.["X-Request-Id"], `${name} ${status}`).toBeDefined();
      }
    }
  });

  it("uses the RFIError shape on the information-request operations and Error elsewhere", () => {
    const schemaOf = (op: Operation, status: string) =>
      JSON.stringify(op.responses[status]?.content?.["application/json"]?.schema);
    const answer = doc.paths["/cases/{caseId}/rfi/{rfiId}/response"]?.post as Operation;
    expect(schemaOf(answer, "422")).toContain("#/components/schemas/RFIError");
    expect(schemaOf(answer, "404")).toContain("#/components/schemas/RFIError");
    const read = doc.paths["/cases/{caseId}"]?.get as Operation;
    expect(schemaOf(read, "404")).toContain("#/components/schemas/Error");
  });

  it("has no router wildcard for a path: the upload URL is opaque, described on UploadSlot", () => {
    expect(Object.keys(doc.paths).filter((p) => p.includes("*"))).toEqual([]);
    expect(JSON.stringify(doc.components.schemas.UploadSlot)).toContain("opaque");
  });

  it("names the partner's schemas in components", () => {
    for (const name of [
      "Case",
      "CaseSubmission",
      "CaseSubmitted",
      "CaseList",
      "Decision",
      "Subject",
      "Tag",
      "InformationRequest",
      "UploadSlot",
      "RFIAnswer",
      "Error",
      "RFIError",
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
  });

  it("lists every webhook event with its payload schema, signature headers and timestamp", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      "case.decided",
      "case.decision_overridden",
      "case.failed",
      "case.pending_review",
      "case.rfi_answered",
      "case.rfi_requested",
      "external_callback.dispatch",
      "node.notification",
    ]);
    for (const [event, { post }] of Object.entries(doc.webhooks)) {
      const parameters = (post as unknown as { parameters: Array<{ name: string }> }).parameters;
      expect(
        parameters.map((p) => p.name),
        event,
      ).toEqual(["X-Service-Signature", "X-Service-Secret-ID"]);
      const ref = JSON.stringify(post.requestBody.content["application/json"]?.schema);
      const name = /#\/components\/schemas\/(\w+)/.exec(ref)?.[1] ?? "";
      const properties = doc.components.schemas[name]?.properties ?? {};
      expect(Object.keys(properties), event).toContain("webhookId");
      if (event.startsWith("case.")) expect(Object.keys(properties), event).toContain("timestamp");
    }
  });

  it("carries examples that are valid against their own schemas", () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    const withExamples = Object.entries(doc.components.schemas).filter(([, s]) => s.examples?.length);
    expect(withExamples.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        "Case",
        "CaseSubmission",
        "InformationRequest",
        "UploadSlot",
        "RFIAnswer",
        "Error",
      ]),
    );
    for (const [name, schema] of withExamples) {
      const validate = ajv.compile({
        $id: `example:${name}`,
        $ref: `#/components/schemas/${name}`,
        components: doc.components,
      });
      for (const example of schema.examples ?? []) {
        expect(validate(example), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
  });
});
