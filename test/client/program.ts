/**
 * A partner's program written against a client generated from /openapi.json (openapi-typescript
 * types, openapi-fetch calls). The generated-client test compiles it with the generated
 * `api.d.ts` beside it, then runs it against the service; it prints one JSON line of results.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Case = components["schemas"]["Case"];
type ApiError = components["schemas"]["Error"];

const [baseUrl, adminToken] = process.argv.slice(2) as [string, string];
const operator = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${adminToken}` } });

async function main(): Promise<void> {
  const tenant = await operator.POST("/admin/tenants", { body: { name: "Generated Client Bank" } });
  if (!tenant.data) throw new Error(`creating a tenant: ${tenant.error?.error}`);
  const tenantId: string = tenant.data.tenantId;

  const key = await operator.POST("/admin/tenants/{tenantId}/api-keys", {
    params: { path: { tenantId } },
    body: { name: "client", scopes: ["cases:read", "cases:write", "tags:read", "tags:write"] },
  });
  if (!key.data) throw new Error(`creating a key: ${key.error?.error}`);
  await operator.PUT("/admin/tenants/{tenantId}/tag-options/{tag}", {
    params: { path: { tenantId, tag: "vip" } },
    body: { enabled: true },
  });
  const workflow = await operator.POST("/admin/tenants/{tenantId}/workflows/{workflowId}/versions", {
    params: { path: { tenantId, workflowId: "screen" } },
    body: {
      inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
      start: "decide",
      nodes: [{ id: "decide", type: "decision", decision: "approved" }],
    },
  });
  if (!workflow.data) throw new Error(`creating a workflow: ${workflow.error?.error}`);
  await operator.POST("/admin/tenants/{tenantId}/workflows/{workflowId}/versions/{version}/publish", {
    params: { path: { tenantId, workflowId: "screen", version: 1 } },
  });

  const partner = createClient<paths>({ baseUrl, headers: { "x-api-key": key.data.key } });
  const submitted = await partner.POST("/cases", {
    body: {
      workflowId: "screen",
      type: "KYC",
      payload: { amount: 10 },
      subject: { person: { firstName: "Ada", lastName: "Lovelace", nationality: "GB" } },
    },
  });
  if (!submitted.data) throw new Error(`submitting: ${submitted.error?.error}`);
  const caseId: string = submitted.data.caseId;

  const read = await partner.GET("/cases/{caseId}", { params: { path: { caseId } } });
  if (!read.data) throw new Error(`reading: ${read.error?.error}`);
  const kase: Case = read.data;
  const firstName: string | undefined = kase.subject.person?.firstName;

  const tagged = await partner.POST("/cases/{caseId}/tags", {
    params: { path: { caseId } },
    body: { tag: "vip" },
  });
  if (!tagged.data) throw new Error(`tagging: ${tagged.error?.error}`);

  const missing = await partner.GET("/cases/{caseId}", {
    params: { path: { caseId: "00000000-0000-4000-8000-000000000000" } },
  });
  const notFound: ApiError | undefined = missing.error;

  const rfi = await partner.POST("/cases/{caseId}/rfi", {
    params: { path: { caseId } },
    body: { to: "ada@example.com", subject: "Proof of address", body: "Please upload a utility bill." },
  });
  if (!rfi.data) throw new Error(`raising an information request: ${rfi.error?.error}`);
  const file = new TextEncoder().encode("%PDF-1.4 generated client\n");
  const slot = await partner.POST("/cases/{caseId}/rfi/{rfiId}/documents", {
    params: { path: { caseId, rfiId: rfi.data.rfiId } },
    body: { filename: "bill.pdf", contentType: "application/pdf", sizeBytes: file.byteLength },
  });
  if (!slot.data) throw new Error(`minting an upload slot: ${slot.error?.error}`);
  // The upload URL is opaque: PUT the bytes to it exactly as given.
  const upload = await fetch(slot.data.uploadUrl, {
    method: "PUT",
    headers: { "content-type": "application/pdf", "if-none-match": "*" },
    body: file,
  });
  const answered = await partner.POST("/cases/{caseId}/rfi/{rfiId}/response", {
    params: { path: { caseId, rfiId: rfi.data.rfiId } },
    body: { documents: [{ uploadId: slot.data.uploadId, label: "utility bill" }] },
  });

  console.log(
    JSON.stringify({
      caseStatus: submitted.data.status,
      firstName,
      tag: tagged.data.tag,
      notFound: { status: missing.response.status, code: notFound?.code },
      upload: upload.status,
      documents: answered.data?.documentCount,
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
