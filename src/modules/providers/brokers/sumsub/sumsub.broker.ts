import countries from "i18n-iso-countries";
import { AppError } from "../../../../platform/errors.js";
import type { Broker, EventVerdict, RunView } from "../../broker.js";
import type { VendorClient } from "../../vendor-http.js";
import {
  APP_TOKEN_HEADER,
  DIGEST_ALG_HEADER,
  DIGEST_HEADER,
  digestMatches,
  type FixedInfo,
  parseCreatedAt,
  requestSignature,
  SIG_HEADER,
  TS_HEADER,
} from "./sumsub.wire.js";
import { describeSumsubRun } from "./sumsub.words.js";

export interface SumsubConfig {
  levelName: string;
  allowRetries: boolean;
  /** Lifetime of SDK tokens and WebSDK links. */
  ttlInSeconds: number;
}

export interface SumsubCredentials {
  appToken: string;
  secretKey: string;
}

const DEFAULT_TTL_SECONDS = 1800;

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/** Sumsub names countries by ISO 3166-1 alpha-3; cases carry alpha-2. */
const alpha3 = (v: unknown): string | undefined => {
  const code = str(v);
  return code ? (countries.alpha2ToAlpha3(code.toUpperCase()) ?? undefined) : undefined;
};

function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function address(raw: unknown): Record<string, string> | undefined {
  const a = obj(raw);
  const mapped = compact({
    street: str(a.line1),
    subStreet: str(a.line2),
    town: str(a.city),
    postCode: str(a.postalCode),
    state: str(a.region),
    country: alpha3(a.country),
  });
  return Object.keys(mapped).length > 0 ? (mapped as Record<string, string>) : undefined;
}

/** `fixedInfo` (and the top-level email and phone) from the case's `person` fields. */
export function personPrefill(person: Record<string, unknown>): {
  fixedInfo: FixedInfo;
  email?: string;
  phone?: string;
} {
  const home = address(person.address);
  const fixedInfo = compact<FixedInfo>({
    firstName: str(person.firstName),
    lastName: str(person.lastName),
    dob: str(person.dateOfBirth),
    nationality: alpha3(person.nationality),
    phone: str(person.phone),
    addresses: home ? [home] : undefined,
  });
  return compact({ fixedInfo, email: str(person.email), phone: str(person.phone) });
}

/** `fixedInfo.companyInfo` from the case's `business` fields. */
export function businessPrefill(business: Record<string, unknown>): { fixedInfo: FixedInfo } {
  const a = obj(business.address);
  const legalAddress = [a.line1, a.line2, a.postalCode, a.city, a.region, a.country]
    .filter((x) => typeof x === "string" && x)
    .join(", ");
  const companyInfo = compact({
    companyName: str(business.legalName),
    registrationNumber: str(business.registrationNumber),
    country: alpha3(business.country),
    incorporatedOn: str(business.incorporationDate),
    legalAddress: legalAddress || undefined,
  });
  return { fixedInfo: { companyInfo } };
}

function prefillOf(subject: Record<string, unknown>): {
  fixedInfo?: FixedInfo;
  email?: string;
  phone?: string;
} {
  if (subject.person) return personPrefill(obj(subject.person));
  if (subject.business) return businessPrefill(obj(subject.business));
  return {};
}

const ADDRESS_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: Object.fromEntries(
    ["line1", "line2", "city", "postalCode", "region", "country"].map((k) => [
      k,
      { type: "string", maxLength: 256 },
    ]),
  ),
};
const PERSON_PARAMS = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...Object.fromEntries(
      ["firstName", "lastName", "email", "phone"].map((k) => [k, { type: "string", maxLength: 256 }]),
    ),
    dateOfBirth: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
    nationality: { type: "string", pattern: "^[A-Z]{2}$" },
    address: ADDRESS_SCHEMA,
  },
};
const BUSINESS_PARAMS = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...Object.fromEntries(
      ["legalName", "registrationNumber"].map((k) => [k, { type: "string", maxLength: 256 }]),
    ),
    country: { type: "string", pattern: "^[A-Z]{2}$" },
    incorporationDate: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
    address: ADDRESS_SCHEMA,
  },
};
const NO_PARAMS = { type: "object", additionalProperties: false };

function idOf(body: unknown, action: string): string {
  const id = str(obj(body).id);
  if (!id) throw new AppError("provider_failed", `${action}: the vendor's answer carries no applicant id`);
  return id;
}

async function findApplicant(vendor: VendorClient, externalUserId: string): Promise<string | undefined> {
  const res = await vendor.request({
    action: "find_applicant",
    method: "GET",
    path: `/resources/applicants/-;externalUserId=${encodeURIComponent(externalUserId)}/one`,
    accept: [404],
  });
  return res.status === 404 ? undefined : idOf(res.body, "find_applicant");
}

/**
 * The applicant of an external user id, created (prefilled) when the vendor has none. A retried
 * start, or a create whose answer was lost, meets the vendor's 409 and finds the one it made.
 */
async function findOrCreateApplicant(
  vendor: VendorClient,
  externalUserId: string,
  levelName: string,
  subject: Record<string, unknown>,
): Promise<string> {
  const prefill = prefillOf(subject);
  const res = await vendor.request({
    action: "create_applicant",
    method: "POST",
    path: `/resources/applicants?levelName=${encodeURIComponent(levelName)}`,
    body: { externalUserId, ...prefill },
    accept: [409],
  });
  if (res.status !== 409) return idOf(res.body, "create_applicant");
  const found = await findApplicant(vendor, externalUserId);
  if (!found)
    throw new AppError(
      "provider_failed",
      "create_applicant: the vendor reports the applicant exists but cannot find it",
    );
  if (prefill.fixedInfo && Object.keys(prefill.fixedInfo).length > 0)
    await patchFixedInfo(vendor, found, prefill.fixedInfo);
  return found;
}

async function patchFixedInfo(
  vendor: VendorClient,
  applicantId: string,
  fixedInfo: FixedInfo,
): Promise<void> {
  await vendor.request({
    action: "prefill",
    method: "PATCH",
    path: `/resources/applicants/${encodeURIComponent(applicantId)}/fixedInfo`,
    body: fixedInfo,
  });
}

/** POSTs to the vendor and returns one string field of its answer, which must be there. */
async function postFor(vendor: VendorClient, action: string, path: string, body: object, field: string) {
  const res = await vendor.request({ action, method: "POST", path, body });
  const value = str(obj(res.body)[field]);
  if (!value) throw new AppError("provider_failed", `${action}: the vendor's answer carries no ${field}`);
  return value;
}

async function sdkToken(vendor: VendorClient, userId: string, levelName: string, ttl: number) {
  const body = { userId, levelName, ttlInSecs: ttl };
  const token = await postFor(vendor, "sdk_token", "/resources/accessTokens/sdk", body, "token");
  return { sdk_token: token, sdk_token_expires_at: new Date(Date.now() + ttl * 1000).toISOString() };
}

async function websdkLink(vendor: VendorClient, userId: string, levelName: string, ttl: number) {
  const path = "/resources/sdkIntegrations/levels/-/websdkLink";
  const url = await postFor(vendor, "websdk_link", path, { levelName, userId, ttlInSecs: ttl }, "url");
  return { verification_url: url };
}

function applicantOf(run: RunView<SumsubConfig>): { applicantId: string; externalUserId: string } {
  const applicantId = run.subjectRef;
  const externalUserId = str(run.state.externalUserId);
  if (!applicantId || !externalUserId) throw new Error(`sumsub run ${run.runId} has no applicant`);
  return { applicantId, externalUserId };
}

export const sumsubBroker: Broker<SumsubConfig, SumsubCredentials> = {
  id: "sumsub",
  label: "Sumsub identity verification",
  kind: "asynchronous",
  configSchema: {
    type: "object",
    required: ["levelName"],
    additionalProperties: false,
    properties: {
      levelName: { type: "string", minLength: 1, maxLength: 128 },
      allowRetries: { type: "boolean" },
      ttlInSeconds: { type: "integer", minimum: 60, maximum: 86_400 },
    },
  },
  credentialsSchema: {
    type: "object",
    required: ["appToken", "secretKey"],
    additionalProperties: false,
    properties: {
      appToken: { type: "string", minLength: 1, maxLength: 512 },
      secretKey: { type: "string", minLength: 1, maxLength: 512 },
    },
  },
  webhookSecret: "required",
  pendingActions: [
    { id: "refresh_sdk_token", label: "Issue a new SDK access token", paramsSchema: NO_PARAMS },
    { id: "regenerate_link", label: "Issue a new WebSDK verification link", paramsSchema: NO_PARAMS },
    {
      id: "prefill_applicant_info",
      label: "Send the person's details to the applicant",
      paramsSchema: PERSON_PARAMS,
    },
    {
      id: "prefill_company_info",
      label: "Send the company's details to the applicant",
      paramsSchema: BUSINESS_PARAMS,
    },
    {
      id: "reset_level_step",
      label: "Ask the applicant to redo one verification step",
      paramsSchema: {
        type: "object",
        required: ["step"],
        additionalProperties: false,
        properties: { step: { type: "string", pattern: "^[A-Z][A-Z0-9_]{0,63}$" } },
      },
    },
    { id: "reset_applicant", label: "Reset the applicant's verification", paramsSchema: NO_PARAMS },
  ],
  durableActions: [
    {
      id: "regenerate_share_token",
      label: "Issue a token that shares the applicant with another client",
      paramsSchema: {
        type: "object",
        required: ["forClientId"],
        additionalProperties: false,
        properties: {
          forClientId: { type: "string", minLength: 1, maxLength: 256 },
          ttlInSeconds: { type: "integer", minimum: 60, maximum: 31_536_000 },
        },
      },
    },
  ],

  describeRun: describeSumsubRun,

  parseConfig(raw) {
    return {
      levelName: raw.levelName as string,
      allowRetries: raw.allowRetries === true,
      ttlInSeconds: typeof raw.ttlInSeconds === "number" ? raw.ttlInSeconds : DEFAULT_TTL_SECONDS,
    };
  },

  signer(credentials) {
    return ({ method, pathWithQuery, body }) => {
      const ts = String(Math.floor(Date.now() / 1000));
      return {
        [APP_TOKEN_HEADER]: credentials.appToken,
        [TS_HEADER]: ts,
        [SIG_HEADER]: requestSignature(credentials.secretKey, ts, method, pathWithQuery, body),
      };
    };
  },

  async start({ vendor }, input) {
    const externalUserId = input.externalCustomerId ?? input.caseId;
    const { levelName, ttlInSeconds } = input.config;
    const applicantId = await findOrCreateApplicant(vendor, externalUserId, levelName, input.subject);
    const token = await sdkToken(vendor, externalUserId, levelName, ttlInSeconds);
    const link = await websdkLink(vendor, externalUserId, levelName, ttlInSeconds);
    return {
      kind: "waiting",
      subjectRef: applicantId,
      state: { externalUserId, levelName },
      notification: {
        payloadType: "idv-application-start",
        output: { applicant_id: applicantId, external_user_id: externalUserId, ...link, ...token },
      },
    };
  },

  async pendingAction({ vendor }, { actionId, params, run }) {
    const { applicantId, externalUserId } = applicantOf(run);
    const { levelName, ttlInSeconds } = run.config;
    const path = `/resources/applicants/${encodeURIComponent(applicantId)}`;
    switch (actionId) {
      case "refresh_sdk_token":
        return sdkToken(vendor, externalUserId, levelName, ttlInSeconds);
      case "regenerate_link":
        return websdkLink(vendor, externalUserId, levelName, ttlInSeconds);
      case "prefill_applicant_info": {
        const { fixedInfo } = personPrefill(params);
        await patchFixedInfo(vendor, applicantId, fixedInfo);
        return { applicant_id: applicantId };
      }
      case "prefill_company_info":
        await patchFixedInfo(vendor, applicantId, businessPrefill(params).fixedInfo);
        return { applicant_id: applicantId };
      case "reset_level_step":
        await vendor.request({
          action: "reset_level_step",
          method: "POST",
          path: `${path}/resetStep/${encodeURIComponent(params.step as string)}`,
        });
        return { ok: true };
      case "reset_applicant":
        await vendor.request({ action: "reset_applicant", method: "POST", path: `${path}/reset` });
        return { ok: true };
      default:
        throw new Error(`sumsub has no pending action ${actionId}`);
    }
  },

  async durableAction({ vendor }, { actionId, params, case: kase }) {
    if (actionId !== "regenerate_share_token") throw new Error(`sumsub has no durable action ${actionId}`);
    if (kase.externalCustomerId === null) {
      throw new AppError(
        "conflict",
        "the case has no external customer id, so the applicant cannot be resolved: submit cases with an identifier of type external_customer_id",
      );
    }
    const applicantId = await findApplicant(vendor, kase.externalCustomerId);
    if (!applicantId)
      throw new AppError("conflict", "the vendor has no applicant for the case's external customer id");
    const ttl = typeof params.ttlInSeconds === "number" ? params.ttlInSeconds : 1200;
    const res = await vendor.request({
      action: "share_token",
      method: "POST",
      path: "/resources/accessTokens/shareToken",
      body: { applicantId, forClientId: params.forClientId, ttlInSecs: ttl },
      // Each call mints a new token: a timed-out one is not sent again.
      retry: "unsent",
    });
    const token = str(obj(res.body).token);
    if (!token) throw new AppError("provider_failed", "share_token: the vendor's answer carries no token");
    return { share_token: token, expires_at: new Date(Date.now() + ttl * 1000).toISOString() };
  },

  verifyEvent({ rawBody, headers, secret }) {
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    return digestMatches(secret, rawBody, header(DIGEST_HEADER), header(DIGEST_ALG_HEADER));
  },

  parseEvent(body) {
    const event = obj(body);
    const type = str(event.type);
    if (!type) return undefined;
    return {
      type,
      body: event,
      subjectRef: str(event.applicantId) ?? null,
      occurredAt: parseCreatedAt(event.createdAtMs),
    };
  },

  async poll({ vendor }, run) {
    const { applicantId, externalUserId } = applicantOf(run);
    const res = await vendor.request({
      action: "get_applicant",
      method: "GET",
      path: `/resources/applicants/${encodeURIComponent(applicantId)}/one`,
    });
    const review = obj(obj(res.body).review);
    if (review.reviewStatus !== "completed" || !review.reviewResult) return undefined;
    const verdict = sumsubBroker.judgeEvent?.(
      {
        type: "applicantReviewed",
        body: { applicantId, externalUserId, reviewResult: review.reviewResult },
        subjectRef: applicantId,
        occurredAt: null,
      },
      run,
    );
    return verdict;
  },

  judgeEvent(event, run): EventVerdict {
    if (event.type !== "applicantReviewed")
      return { kind: "ignore", reason: `${event.type} events do not resolve a run` };
    const review = obj(event.body.reviewResult);
    const answer = str(review.reviewAnswer);
    const applicantId = event.subjectRef as string;
    if (answer === "GREEN") {
      return {
        kind: "resolve",
        output: { review_answer: "GREEN", reject_type: null, reject_labels: null, applicant_id: applicantId },
      };
    }
    if (answer !== "RED") return { kind: "ignore", reason: `review answer ${answer ?? "missing"}` };
    const rejectType = str(review.reviewRejectType) ?? null;
    const rejectLabels = Array.isArray(review.rejectLabels)
      ? review.rejectLabels.filter((l) => typeof l === "string")
      : [];
    if (rejectType === "RETRY" && run.config.allowRetries) {
      return {
        kind: "notify",
        payloadType: "idv-retry-requested",
        output: {
          applicant_id: applicantId,
          external_user_id: str(run.state.externalUserId) ?? null,
          review_answer: "RED",
          reject_type: "RETRY",
          reject_labels: rejectLabels,
        },
      };
    }
    return {
      kind: "resolve",
      output: {
        review_answer: "RED",
        reject_type: rejectType,
        reject_labels: rejectLabels,
        applicant_id: applicantId,
      },
    };
  },
};
