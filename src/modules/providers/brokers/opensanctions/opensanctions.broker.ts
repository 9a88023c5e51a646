import { AppError } from "../../../../platform/errors.js";
import type { Broker, CaseSubject } from "../../broker.js";
import type { VendorClient } from "../../vendor-http.js";

export interface OpenSanctionsConfig {
  dataset: string;
  /** A result scoring at or above it is a match. */
  threshold: number;
}

export interface OpenSanctionsCredentials {
  apiKey: string;
}

export interface MatchQuery {
  schema: "Person" | "Company";
  properties: Record<string, string[]>;
}

const str = (v: unknown): string | undefined =>
  typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** The yente match query for the case's person or business; undefined for other subjects. */
export function matchQuery(subject: Record<string, unknown>): MatchQuery | undefined {
  const properties: Record<string, string[]> = {};
  const add = (key: string, value: string | undefined) => {
    if (value) properties[key] = [value];
  };
  if (subject.person) {
    const p = obj(subject.person);
    add("name", [str(p.firstName), str(p.lastName)].filter(Boolean).join(" ") || str(subject.displayName));
    add("birthDate", str(p.dateOfBirth));
    add("nationality", str(p.nationality)?.toLowerCase());
    return properties.name ? { schema: "Person", properties } : undefined;
  }
  if (subject.business) {
    const b = obj(subject.business);
    add("name", str(b.legalName) ?? str(subject.displayName));
    add("country", str(b.country)?.toLowerCase());
    return properties.name ? { schema: "Company", properties } : undefined;
  }
  return undefined;
}

async function screen(vendor: VendorClient, kase: CaseSubject, config: OpenSanctionsConfig) {
  const query = matchQuery(kase.subject);
  if (!query) {
    throw new AppError(
      "invalid_request",
      "opensanctions screens a person or a business: the case's subject has neither a name nor a legal name",
    );
  }
  const res = await vendor.request({
    action: "match",
    method: "POST",
    path: `/match/${encodeURIComponent(config.dataset)}`,
    body: { queries: { q: query } },
  });
  const answer = obj(obj(obj(res.body).responses).q);
  if (!Array.isArray(answer.results))
    throw new AppError("provider_failed", "match: the vendor's answer carries no results");
  const results = answer.results.map((r) => {
    const o = obj(r);
    return {
      id: String(o.id ?? ""),
      caption: String(o.caption ?? ""),
      score: typeof o.score === "number" ? o.score : 0,
      datasets: Array.isArray(o.datasets) ? o.datasets.filter((d) => typeof d === "string") : [],
    };
  });
  const top = results.reduce((max, r) => Math.max(max, r.score), 0);
  return { matched: results.some((r) => r.score >= config.threshold), top_score: top, results };
}

export const openSanctionsBroker: Broker<OpenSanctionsConfig, OpenSanctionsCredentials> = {
  id: "opensanctions",
  label: "OpenSanctions sanctions and PEP screening",
  kind: "synchronous",
  configSchema: {
    type: "object",
    additionalProperties: false,
    properties: {
      dataset: { type: "string", pattern: "^[a-z0-9_]{1,64}$" },
      threshold: { type: "number", minimum: 0, maximum: 1 },
    },
  },
  credentialsSchema: {
    type: "object",
    required: ["apiKey"],
    additionalProperties: false,
    properties: { apiKey: { type: "string", minLength: 1, maxLength: 512 } },
  },
  webhookSecret: "none",
  pendingActions: [],
  durableActions: [
    {
      id: "rescreen",
      label: "Screen the case's subject again",
      paramsSchema: { type: "object", additionalProperties: false },
    },
  ],

  parseConfig(raw) {
    return {
      dataset: typeof raw.dataset === "string" ? raw.dataset : "default",
      threshold: typeof raw.threshold === "number" ? raw.threshold : 0.7,
    };
  },

  signer(credentials) {
    return () => ({ authorization: `ApiKey ${credentials.apiKey}` });
  },

  async start({ vendor }, input) {
    return { kind: "completed", output: await screen(vendor, input, input.config) };
  },

  async pendingAction(_call, { actionId }) {
    throw new Error(`opensanctions has no pending action ${actionId}`);
  },

  async durableAction({ vendor }, { actionId, case: kase, runs }) {
    if (actionId !== "rescreen") throw new Error(`opensanctions has no durable action ${actionId}`);
    return screen(vendor, kase, (runs[0] as (typeof runs)[number]).config);
  },
};
