import { AppError } from "../../../../platform/errors.js";
import type { Broker, CaseSubject, ScreeningHit } from "../../broker.js";
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

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

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
    const props = obj(o.properties);
    return {
      id: String(o.id ?? ""),
      caption: String(o.caption ?? ""),
      score: typeof o.score === "number" ? o.score : 0,
      datasets: strings(o.datasets),
      birthDates: strings(props.birthDate),
      nationalities: [...new Set([...strings(props.nationality), ...strings(props.citizenship)])],
      countries: strings(props.country),
    };
  });
  // A hit whose verdict for the subject is "no_match" is reported apart, under `dismissedHits`:
  // `matched` and `top_score` are over `results` alone, so a known false positive does not make
  // the case matched again.
  const dismissed = (r: { id: string }) => kase.verdicts.get(r.id) === "no_match";
  const kept = results.filter((r) => !dismissed(r));
  const top = kept.reduce((max, r) => Math.max(max, r.score), 0);
  const hits = kept.filter((r) => r.score >= config.threshold);
  return {
    matched: hits.length > 0,
    top_score: top,
    results: kept,
    dismissedHits: results.filter(dismissed),
    // How many of the hits at or above the threshold no analyst has marked for the subject.
    unreviewedHits: hits.filter((r) => !kase.verdicts.has(r.id)).length,
    threshold: config.threshold,
  };
}

/** The hits of a screening's output (a node's or a rescreen's), for the analysts' review. */
function hitsOf(output: Record<string, unknown>): ScreeningHit[] {
  const threshold = typeof output.threshold === "number" ? output.threshold : undefined;
  // The results, then the hits dismissed for the subject (still reviewable: a verdict can change).
  const results = [output.results, output.dismissedHits].flatMap((list) =>
    Array.isArray(list) ? list.map(obj) : [],
  );
  return results.map((r) => {
    const score = typeof r.score === "number" ? r.score : 0;
    return {
      id: String(r.id ?? ""),
      name: String(r.caption ?? ""),
      birthDates: strings(r.birthDates),
      nationalities: strings(r.nationalities),
      countries: strings(r.countries),
      datasets: strings(r.datasets),
      score,
      // An output from before the threshold was reported: `matched` then tells for the top hit.
      aboveThreshold:
        threshold === undefined ? output.matched === true && score === output.top_score : score >= threshold,
    };
  });
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
      keepsOutput: true,
    },
  ],
  hitsOf,

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
