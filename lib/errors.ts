import type { ContentfulStatusCode } from "hono/utils/http-status";

/** The `type` of an error, from its status (the data API's PostgREST errors use the same table). */
const TYPE_BY_STATUS: Record<number, string> = {
  300: "invalid_request",
  400: "invalid_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "invalid_request",
  406: "invalid_request",
  408: "timeout",
  409: "conflict",
  413: "invalid_request",
  415: "invalid_request",
  416: "invalid_request",
  429: "rate_limit",
  500: "internal",
  503: "unavailable",
  504: "timeout",
};

/** The `type` of a status: from the table, else `internal` for 5xx and `invalid_request` below. */
export const typeOfStatus = (status: number): string =>
  TYPE_BY_STATUS[status] ?? (status >= 500 ? "internal" : "invalid_request");

/** Options of an {@linkcode AppError}. */
export interface AppErrorOptions {
  /** Overrides the `type` derived from the status (e.g. `quota` for QUOTA_EXCEEDED). */
  type?: string;
  /** The private cause: logged, never sent to the client. */
  cause?: unknown;
  /** Extra response headers, such as `Retry-After`. */
  headers?: Record<string, string>;
  /**
   * Why, in finer grain than the code (`invalid_credentials`, `refresh_token_already_used`, …): never in the
   * platform's own envelope; the compatibility mounts render it (GoTrue's `error_code` on `/auth/v1`).
   */
  reason?: string;
  /** The rules a refused password breaks (`length`, `characters`, `pwned`), with reason `weak_password`. */
  reasons?: string[];
}

/**
 * AppError is the one error type of the platform: a status, a code of the catalogue and a public message.
 * Anything else that reaches the error handler becomes a bare 500 that leaks nothing.
 */
export class AppError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly type: string;
  readonly headers: Record<string, string>;
  readonly reason: string | undefined;
  readonly reasons: string[] | undefined;

  constructor(status: ContentfulStatusCode, code: string, message: string, options: AppErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.status = status;
    this.code = code;
    this.type = options.type ?? typeOfStatus(status);
    this.headers = options.headers ?? {};
    this.reason = options.reason;
    this.reasons = options.reasons;
  }
}

/** Shorthands for the error catalogue. */
export const errors = {
  validation: (message: string, reason?: string) =>
    new AppError(400, "VALIDATION_ERROR", message, { reason }),
  /** A new password the policy refuses, with the rules it breaks. */
  weakPassword: (message: string, reasons: string[]) =>
    new AppError(400, "VALIDATION_ERROR", message, { reason: "weak_password", reasons }),
  unauthorized: (message: string, reason?: string) => new AppError(401, "UNAUTHORIZED", message, { reason }),
  invalidToken: (message: string, reason?: string) => new AppError(401, "INVALID_TOKEN", message, { reason }),
  forbidden: (message: string, reason?: string) => new AppError(403, "FORBIDDEN", message, { reason }),
  reservedTo: (role: string) => new AppError(403, "FORBIDDEN", `This operation is reserved to ${role}`),
  notFound: (message: string) => new AppError(404, "NOT_FOUND", message),
  projectNotFound: (ref: string) => new AppError(404, "PROJECT_NOT_FOUND", `Project "${ref}" does not exist`),
  conflict: (message: string, reason?: string) => new AppError(409, "CONFLICT", message, { reason }),
  bodyTimeout: (ms: number) =>
    new AppError(408, "REQUEST_TIMEOUT", `The request body did not arrive within ${ms} ms`, {
      headers: { connection: "close" },
    }),
  unreadableBody: () =>
    new AppError(
      400,
      "VALIDATION_ERROR",
      "The request body could not be read: it is malformed or was cut off",
      {
        headers: { connection: "close" },
      },
    ),
  tooLarge: (limit?: number) =>
    new AppError(
      413,
      "PAYLOAD_TOO_LARGE",
      limit === undefined
        ? "Request body is too large"
        : `Request body is larger than the limit of ${limit} bytes`,
    ),
  /** The catalogue's one lower-case code: a client, a key or a caller asked too often (`Retry-After`, s). */
  rateLimited: (message: string, retryAfterSeconds: number | string, cause?: unknown) =>
    new AppError(429, "rate_limit_exceeded", message, {
      headers: { "retry-after": String(retryAfterSeconds) },
      cause,
    }),
  /** Another mail to a user asked for too soon (GoTrue's `over_email_send_rate_limit`, with its words). */
  emailRateLimited: (retryAfterSeconds: number) =>
    new AppError(
      429,
      "rate_limit_exceeded",
      `For security purposes, you can only request this after ${retryAfterSeconds} seconds.`,
      { reason: "over_email_send_rate_limit", headers: { "retry-after": String(retryAfterSeconds) } },
    ),
  /** A count limit of a connection or a resource (429, type `rate_limit`, no retry: it will not pass). */
  limitExceeded: (message: string) => new AppError(429, "LIMIT_EXCEEDED", message, { type: "rate_limit" }),
  quotaExceeded: (message: string) => new AppError(403, "QUOTA_EXCEEDED", message, { type: "quota" }),
  unsupportedMediaType: (message = "Content-Type must be application/json") =>
    new AppError(415, "UNSUPPORTED_MEDIA_TYPE", message),
  requestAborted: () => new AppError(400, "REQUEST_ABORTED", "Request aborted by the client"),
  timeout: (message: string, cause?: unknown) => new AppError(504, "TIMEOUT", message, { cause }),
  /** A statement of the owner's SQL failed: its SQLSTATE is the code, its message the database's own. */
  sqlState: (state: string, message: string) => new AppError(400, state, message),
  /** A function ran and failed: `FUNCTION_ERROR` (it threw), `FUNCTION_CRASHED` or `FUNCTION_OOM`. */
  functionFailed: (code: "FUNCTION_ERROR" | "FUNCTION_CRASHED" | "FUNCTION_OOM", message: string) =>
    new AppError(500, code, message),
  /** An HTTP error of the framework with no code of its own (the status is kept). */
  http: (status: number, message: string) => new AppError(status as ContentfulStatusCode, "ERROR", message),
  unavailable: (message: string, cause?: unknown) =>
    new AppError(503, "SERVICE_UNAVAILABLE", message, { cause }),
  internal: (cause?: unknown) => new AppError(500, "INTERNAL_ERROR", "Internal server error", { cause }),
};
