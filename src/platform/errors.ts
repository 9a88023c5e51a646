/**
 * The closed list of error codes the service answers with, and the one status each maps to.
 * Services throw `AppError`s and never see HTTP; the error handler turns them into responses.
 */
export const ERROR_STATUS = {
  // general
  bad_request: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  bad_gateway: 502,
  unavailable: 503,
  // information requests (RFIError codes of the spec and the contract)
  invalid_request: 400,
  not_pending: 409,
  case_terminal: 409,
  dry_run: 409,
  already_answered: 409,
  document_not_uploaded: 422,
  invalid_field_key: 422,
  invalid_field_value: 422,
  fields_too_large: 422,
  too_many_documents: 422,
  upload_limit_reached: 422,
  // tags
  tag_limit_reached: 409,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A failing part of a request: where (a JSON pointer or parameter name) and what is wrong. */
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
    this.status = ERROR_STATUS[code];
    this.extra = options.extra;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export const notFound = (what: string) => new AppError("not_found", `${what} not found`);
export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new AppError("validation_failed", message, details ? { details } : {});
export const conflict = (message: string) => new AppError("conflict", message);
