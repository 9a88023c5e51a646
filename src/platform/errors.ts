/**
 * The one catalogue of error codes the service answers with, each with its status. Services throw
 * `AppError`s and never see HTTP; the error handler turns them into responses. What each code
 * means to a caller is written once, in docs/errors.md, which lists exactly these codes with
 * their statuses (a test holds the two together). A new code is one line here and one row there.
 */
export const ERRORS = {
  // Any endpoint.
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  provider_failed: 502,
  unavailable: 503,
  // Information-request endpoints (RFIError codes).
  not_pending: 409,
  case_terminal: 409,
  dry_run: 409,
  already_answered: 409,
  document_not_uploaded: 422,
  invalid_field_key: 422,
  invalid_field_value: 422,
  fields_too_large: 422,
  too_many_documents: 422,
  document_replaced: 409,
  upload_limit_reached: 422,
  rfi_limit_reached: 409,
  // Tags.
  tag_limit_reached: 409,
  // Lists.
  list_full: 409,
  list_in_use: 409,
  // Backtests.
  backtest_limit_reached: 409,
  // Requests refused by the HTTP parser before any route runs.
  request_timeout: 408,
  headers_too_large: 431,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERRORS;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** The general code of a status, for errors raised by the framework rather than by our code. */
export function codeForStatus(status: number): ErrorCode {
  if (status >= 500) return status === 503 ? "unavailable" : "internal";
  const found = ERROR_CODES.find((code) => ERRORS[code] === status);
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
    this.status = ERRORS[code];
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
