import { randomBytes, randomUUID } from "node:crypto";
import { safeEqual } from "../../../../platform/crypto.js";
import type { SimReply, SimRequest, SimRoute } from "../../simulator.js";
import { controlRoute, json, Simulator, vendorRoute } from "../../simulator.js";
import {
  APP_TOKEN_HEADER,
  DIGEST_ALG,
  DIGEST_ALG_HEADER,
  DIGEST_HEADER,
  formatCreatedAt,
  payloadDigest,
  requestSignature,
  SIG_HEADER,
  TS_HEADER,
} from "./sumsub.wire.js";

export interface SumsubSimulatorOptions {
  appToken: string;
  secretKey: string;
  /** Where review webhooks go (the `inboundWebhookUrl` of the provider configuration). */
  webhookUrl?: string;
  webhookSecret?: string;
}

export const SUMSUB_SIMULATOR_DEFAULTS = {
  appToken: "sbx:simulator-app-token",
  secretKey: "simulator-secret-key",
  webhookSecret: "simulator-webhook-secret",
} as const;

export interface SimApplicant {
  id: string;
  externalUserId: string;
  levelName: string;
  createdAt: string;
  email?: string;
  phone?: string;
  fixedInfo: Record<string, unknown>;
  review: { reviewStatus: string; reviewResult?: Record<string, unknown> };
  resets: string[];
}

export interface ReviewInput {
  reviewAnswer: "GREEN" | "RED";
  reviewRejectType?: "FINAL" | "RETRY";
  rejectLabels?: string[];
  /** The event's `createdAtMs`; default now. */
  createdAt?: string;
}

export interface SentWebhook {
  status: number | null;
  error?: string;
  body: string;
  digest: string;
}

const MAX_CLOCK_SKEW_S = 300;

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

/**
 * A Sumsub stand-in: applicants, access and share tokens, WebSDK links, and review webhooks.
 * A link opens a page with buttons that approve or reject the applicant; the same is
 * `POST /_simulator/applicants/{id}/review`. Either sends the signed `applicantReviewed` webhook.
 */
export class SumsubSimulator extends Simulator {
  readonly applicants = new Map<string, SimApplicant>();
  /** WebSDK links: link id to the user they verify. */
  readonly links = new Map<string, { userId: string; levelName: string }>();
  readonly shareTokens: Array<{ token: string; applicantId: string; forClientId: string }> = [];
  readonly webhooks: SentWebhook[] = [];

  constructor(private readonly options: SumsubSimulatorOptions) {
    super();
  }

  setWebhook(url: string, secret: string): void {
    this.options.webhookUrl = url;
    this.options.webhookSecret = secret;
  }

  private byExternalUserId(externalUserId: string): SimApplicant | undefined {
    for (const a of this.applicants.values()) if (a.externalUserId === externalUserId) return a;
    return undefined;
  }

  protected authenticate(req: SimRequest): SimReply | undefined {
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const token = header(APP_TOKEN_HEADER);
    const ts = header(TS_HEADER);
    const sig = header(SIG_HEADER);
    const refuse = (description: string) => json(401, { description, code: 401, errorCode: 4000 });
    if (!token || !ts || !sig) return refuse("missing X-App-Token, X-App-Access-Ts or X-App-Access-Sig");
    if (!safeEqual(token, this.options.appToken)) return refuse("unknown app token");
    if (!/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > MAX_CLOCK_SKEW_S) {
      return refuse("request timestamp is too far from the server's clock");
    }
    const search = req.query.toString();
    const pathWithQuery = `${req.path}${search ? `?${search}` : ""}`;
    const expected = requestSignature(
      this.options.secretKey,
      ts,
      req.method,
      pathWithQuery,
      req.rawBody.toString("utf8"),
    );
    if (!safeEqual(expected, sig.toLowerCase())) return refuse("request signature mismatch");
    return undefined;
  }

  private applicant(id: string): SimApplicant | SimReply {
    return this.applicants.get(id) ?? json(404, { description: `applicant ${id} not found`, code: 404 });
  }

  protected routes(): SimRoute[] {
    const body = (req: SimRequest) => (req.body ?? {}) as Record<string, unknown>;
    const applicantRoute = (
      method: string,
      suffix: string,
      action: string,
      handle: (a: SimApplicant, req: SimRequest) => SimReply,
    ): SimRoute =>
      vendorRoute(method, new RegExp(`^/resources/applicants/([^/;]+)${suffix}$`), action, (req) => {
        const found = this.applicant(req.params[0] as string);
        return "id" in found ? handle(found, req) : found;
      });
    return [
      vendorRoute("POST", /^\/resources\/applicants$/, "create_applicant", (req) => {
        const b = body(req);
        const levelName = req.query.get("levelName");
        if (!levelName) return json(400, { description: "levelName is required", code: 400 });
        if (typeof b.externalUserId !== "string" || !b.externalUserId) {
          return json(400, { description: "externalUserId is required", code: 400 });
        }
        if (this.byExternalUserId(b.externalUserId)) {
          return json(409, {
            description: `Applicant with external user id '${b.externalUserId}' already exists`,
            code: 409,
            correlationId: randomUUID(),
          });
        }
        const applicant: SimApplicant = {
          id: randomBytes(12).toString("hex"),
          externalUserId: b.externalUserId,
          levelName,
          createdAt: formatCreatedAt(new Date()),
          ...(typeof b.email === "string" ? { email: b.email } : {}),
          ...(typeof b.phone === "string" ? { phone: b.phone } : {}),
          fixedInfo: (b.fixedInfo as Record<string, unknown>) ?? {},
          review: { reviewStatus: "init" },
          resets: [],
        };
        this.applicants.set(applicant.id, applicant);
        return json(200, applicant);
      }),
      vendorRoute(
        "GET",
        /^\/resources\/applicants\/-;externalUserId=([^/]+)\/one$/,
        "find_applicant",
        (req) => {
          const found = this.byExternalUserId(req.params[0] as string);
          return found ? json(200, found) : json(404, { description: "Applicant not found", code: 404 });
        },
      ),
      applicantRoute("GET", "/one", "get_applicant", (a) => json(200, a)),
      applicantRoute("PATCH", "/fixedInfo", "prefill", (a, req) => {
        const b = body(req);
        a.fixedInfo = { ...a.fixedInfo, ...b };
        return json(200, a);
      }),
      applicantRoute("POST", "/resetStep/([A-Z0-9_]+)", "reset_level_step", (a, req) => {
        a.resets.push(req.params[1] as string);
        return json(200, { ok: 1 });
      }),
      applicantRoute("POST", "/reset", "reset_applicant", (a) => {
        a.resets.push("*");
        a.review = { reviewStatus: "init" };
        return json(200, { ok: 1 });
      }),
      vendorRoute("POST", /^\/resources\/accessTokens\/sdk$/, "sdk_token", (req) => {
        const b = body(req);
        if (typeof b.userId !== "string") return json(400, { description: "userId is required", code: 400 });
        return json(200, { token: `_act-sbx-${randomBytes(24).toString("base64url")}`, userId: b.userId });
      }),
      vendorRoute("POST", /^\/resources\/sdkIntegrations\/levels\/-\/websdkLink$/, "websdk_link", (req) => {
        const b = body(req);
        if (typeof b.userId !== "string" || typeof b.levelName !== "string") {
          return json(400, { description: "userId and levelName are required", code: 400 });
        }
        const linkId = randomBytes(12).toString("base64url");
        this.links.set(linkId, { userId: b.userId, levelName: b.levelName });
        return json(200, { url: `${this.url}/websdk/p/${linkId}` });
      }),
      vendorRoute("POST", /^\/resources\/accessTokens\/shareToken$/, "share_token", (req) => {
        const b = body(req);
        if (typeof b.applicantId !== "string" || !this.applicants.has(b.applicantId)) {
          return json(404, { description: "applicant not found", code: 404 });
        }
        const token = `_sht-${randomBytes(24).toString("base64url")}`;
        this.shareTokens.push({ token, applicantId: b.applicantId, forClientId: String(b.forClientId) });
        return json(200, { token, forClientId: b.forClientId });
      }),
      // Simulator controls and the WebSDK page.
      controlRoute("GET", /^\/_simulator\/applicants$/, "list", () =>
        json(200, { applicants: [...this.applicants.values()] }),
      ),
      controlRoute("POST", /^\/_simulator\/webhook$/, "webhook", (req) => {
        const b = body(req);
        if (typeof b.url !== "string" || typeof b.secret !== "string") {
          return json(400, { description: "url and secret are required", code: 400 });
        }
        this.setWebhook(b.url, b.secret);
        return json(200, { ok: true });
      }),
      controlRoute("POST", /^\/_simulator\/applicants\/([^/]+)\/review$/, "review", async (req) => {
        const found = this.applicant(req.params[0] as string);
        if (!("id" in found)) return found;
        const b = body(req) as Partial<ReviewInput>;
        if (b.reviewAnswer !== "GREEN" && b.reviewAnswer !== "RED") {
          return json(400, { description: "reviewAnswer must be GREEN or RED", code: 400 });
        }
        return json(200, await this.review(found.id, b as ReviewInput));
      }),
      controlRoute("GET", /^\/websdk\/p\/([^/]+)$/, "page", (req) => this.page(req.params[0] as string)),
      controlRoute("POST", /^\/websdk\/p\/([^/]+)$/, "page", async (req) => {
        const link = this.links.get(req.params[0] as string);
        const applicant = link && this.byExternalUserId(link.userId);
        if (!applicant) return this.page(req.params[0] as string);
        const choice = String((req.body as Record<string, unknown> | undefined)?.decision ?? "");
        const input: ReviewInput =
          choice === "approve"
            ? { reviewAnswer: "GREEN" }
            : choice === "retry"
              ? { reviewAnswer: "RED", reviewRejectType: "RETRY", rejectLabels: ["BAD_PROOF_OF_IDENTITY"] }
              : { reviewAnswer: "RED", reviewRejectType: "FINAL", rejectLabels: ["FORGERY"] };
        const sent = await this.review(applicant.id, input);
        return this.page(
          req.params[0] as string,
          `Review sent (${input.reviewAnswer}${input.reviewRejectType ? ` ${input.reviewRejectType}` : ""}); the webhook was answered ${sent.status ?? sent.error}.`,
        );
      }),
    ];
  }

  private page(linkId: string, notice?: string): SimReply {
    const link = this.links.get(linkId);
    const applicant = link && this.byExternalUserId(link.userId);
    if (!applicant) return { status: 404, html: "<h1>Unknown or expired verification link</h1>" };
    const info = escapeHtml(JSON.stringify(applicant.fixedInfo, null, 2));
    return {
      status: 200,
      html: `<!doctype html><meta charset="utf-8"><title>Sumsub simulator</title>
<h1>Identity verification (simulated)</h1>
<p>Applicant <code>${escapeHtml(applicant.id)}</code>, external user id <code>${escapeHtml(applicant.externalUserId)}</code>, level <code>${escapeHtml(applicant.levelName)}</code>.</p>
<pre>${info}</pre>
${notice ? `<p><strong>${escapeHtml(notice)}</strong></p>` : ""}
<form method="post">
<button name="decision" value="approve">Approve (GREEN)</button>
<button name="decision" value="retry">Reject, may retry (RED RETRY)</button>
<button name="decision" value="reject">Reject for good (RED FINAL)</button>
</form>`,
    };
  }

  /** Records a review of the applicant and sends the signed `applicantReviewed` webhook. */
  async review(applicantId: string, input: ReviewInput): Promise<SentWebhook> {
    const applicant = this.applicants.get(applicantId);
    if (!applicant) throw new Error(`applicant ${applicantId} not found`);
    const reviewResult = {
      reviewAnswer: input.reviewAnswer,
      ...(input.reviewRejectType ? { reviewRejectType: input.reviewRejectType } : {}),
      ...(input.rejectLabels ? { rejectLabels: input.rejectLabels } : {}),
    };
    applicant.review = { reviewStatus: "completed", reviewResult };
    const event = {
      type: "applicantReviewed",
      applicantId,
      inspectionId: randomBytes(12).toString("hex"),
      correlationId: randomUUID(),
      externalUserId: applicant.externalUserId,
      levelName: applicant.levelName,
      reviewStatus: "completed",
      reviewResult,
      sandboxMode: true,
      createdAtMs: input.createdAt ?? formatCreatedAt(new Date()),
    };
    return this.sendWebhook(JSON.stringify(event));
  }

  /** Posts a webhook body, signed as Sumsub signs it, to the configured URL. */
  async sendWebhook(body: string): Promise<SentWebhook> {
    const { webhookUrl, webhookSecret } = this.options;
    if (!webhookUrl || !webhookSecret) {
      throw new Error(
        "no webhook URL configured: start with --webhook-url and --webhook-secret, or POST /_simulator/webhook",
      );
    }
    const digest = payloadDigest(webhookSecret, body);
    const sent: SentWebhook = { status: null, body, digest };
    try {
      const res = await fetch(webhookUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [DIGEST_HEADER]: digest,
          [DIGEST_ALG_HEADER]: DIGEST_ALG,
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      sent.status = res.status;
      await res.arrayBuffer();
    } catch (err) {
      sent.error = (err as Error).message;
    }
    this.webhooks.push(sent);
    return sent;
  }
}
