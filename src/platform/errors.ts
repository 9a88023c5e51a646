/**
 * The one catalogue of error codes the service answers with: each code's status and what it
 * means to a caller. Services throw `AppError`s and never see HTTP; the error handler turns them
 * into responses, and docs/errors.md lists exactly these codes (a test holds the two together).
 * A new code is one line here and one row there.
 */
export const ERRORS = {
  // Any endpoint.
  invalid_request: {
    status: 400,
    meaning: "The request is malformed or fails validation; `details` lists every problem found.",
  },
  unauthenticated: {
    status: 401,
    meaning: "No API key (or operator token), or one that is unknown, deleted or expired.",
  },
  forbidden: { status: 403, meaning: "The key is valid but lacks the scope the endpoint needs." },
  not_found: {
    status: 404,
    meaning:
      "No such route, or no such resource for this tenant (another tenant's resources answer this too).",
  },
  conflict: { status: 409, meaning: "The resource is not in a state that allows the operation." },
  gone: { status: 410, meaning: "The handle or callback has passed its `expiresAt`." },
  precondition_failed: {
    status: 412,
    meaning: "The upload slot already holds a file (uploads are create-only).",
  },
  payload_too_large: {
    status: 413,
    meaning: "The JSON body is larger than 1 MiB, or an upload larger than its slot.",
  },
  unsupported_media_type: {
    status: 415,
    meaning: "The body's `Content-Type` is not one the endpoint reads.",
  },
  rate_limited: { status: 429, meaning: "The key's rate limit is spent; retry after `Retry-After` seconds." },
  internal: {
    status: 500,
    meaning: "An unexpected failure on our side; the request id identifies it in our logs.",
  },
  provider_failed: {
    status: 502,
    meaning: "An outside provider the operation calls failed or did not answer.",
  },
  unavailable: {
    status: 503,
    meaning: "The service cannot serve now (database unreachable, no worker seen).",
  },
  // Information-request endpoints (RFIError codes).
  not_pending: { status: 409, meaning: "The information request is no longer pending." },
  case_terminal: { status: 409, meaning: "The case is closed or failed." },
  dry_run: { status: 409, meaning: "The case is a dry run; its requests take no answers or uploads." },
  already_answered: {
    status: 409,
    meaning: "The request was answered already (`answeredBy`, `answeredAt`).",
  },
  document_not_uploaded: { status: 422, meaning: "A listed `uploadId` has no stored file yet." },
  invalid_field_key: { status: 422, meaning: "An answer field's key is malformed or repeated (`key`)." },
  invalid_field_value: { status: 422, meaning: "An answer field's value cannot be stored (`key`)." },
  fields_too_large: { status: 422, meaning: "The answer's fields exceed their size limit." },
  too_many_documents: { status: 422, meaning: "The answer lists more documents than allowed." },
  upload_limit_reached: { status: 422, meaning: "No more upload slots: 30 per request or 100 per case." },
  rfi_limit_reached: {
    status: 409,
    meaning: "The case has 20 pending information requests, the most it may have open at once.",
  },
  // Tags.
  tag_limit_reached: { status: 409, meaning: "The case carries 100 tags already, the most it can carry." },
  // Lists.
  list_full: { status: 409, meaning: "The change would leave the list with more than 1,000,000 values." },
  list_in_use: {
    status: 409,
    meaning: "A published workflow version reads the list (`details` names each version).",
  },
  // Backtests.
  backtest_limit_reached: {
    status: 409,
    meaning: "The tenant has 3 backtests running, the most it may run at once.",
  },
  // Requests refused by the HTTP parser before any route runs.
  request_timeout: { status: 408, meaning: "The request was not received in time." },
  headers_too_large: { status: 431, meaning: "The request's headers are larger than the service accepts." },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERRORS;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** The general code of a status, for errors raised by the framework rather than by our code. */
export function codeForStatus(status: number): ErrorCode {
  if (status >= 500) return status === 503 ? "unavailable" : "internal";
  const found = ERROR_CODES.find((code) => ERRORS[code].status === status);
  return found ?? "invalid_request";
}

/**
 * A failing part of a request: `path` names the field the way a caller writes it
 * (`subject.transaction.amount`, `parties[0].role`, a query parameter's name; "" for the body
 * itself), and `message` says what is wrong with it.
 */
export interface ErrorDetail {
  path: string;
  message: string;
}

export interface AppErrorOptions {
  /** Properties added to the response body (RFIError extras such as `uploadId`, `key`). */
  extra?: Record<string, unknown>;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown> | undefined;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AppError";
    this.status = ERRORS[code].status;
    this.extra = options.extra;
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** "invalid case submission: a must be x; b is required" from its problems. */
export function describeProblems(prefix: string, problems: readonly ErrorDetail[]): string {
  return `${prefix}: ${problems.map((p) => `${p.path || "the body"} ${p.message}`).join("; ")}`;
}

export const notFound = (what: string) => new AppError("not_found", `${what} not found`);
export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new AppError("invalid_request", message, details ? { details } : {});
export const conflict = (message: string) => new AppError("conflict", message);
