import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { z } from "zod";
import { AppError, errors } from "../lib/errors.ts";
import { connectionLost } from "../lib/connection_lost.ts";
import { describeError, log } from "../lib/log.ts";

/** Maps any thrown value to an AppError; unknown errors become a bare 500 whose cause is only logged. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof HTTPException) {
    if (err.status === 413) return errors.tooLarge();
    if (err.status === 400) return errors.validation(publicHttpMessage(err.message));
    if (err.status === 415) {
      return errors.unsupportedMediaType();
    }
    if (err.status === 401) return errors.unauthorized(err.message || "Unauthorized");
    return errors.http(err.status, err.message || "Request failed");
  }
  // A connection lost under the request (a database restart, a session cut) is a dependency unavailable for a
  // moment, not a fault of the platform's.
  if (connectionLost(err)) {
    return errors.unavailable("A connection the request needed was lost: try again", err);
  }
  return errors.internal(err);
}

// Hono's validator says "Malformed JSON in request body" or "Invalid HTTP header: Content-Type=…".
function publicHttpMessage(message: string): string {
  if (message.startsWith("Invalid HTTP header: Content-Type")) return "Content-Type must be application/json";
  return message || "Invalid request";
}

/** `err` as an AppError, logged when it is the platform's fault or a dependency's. */
export function reportedError(err: unknown, requestId: string, path: string): AppError {
  const e = toAppError(err);
  // A platform fault is an error; a dependency that failed with a known cause is a warning; a user function's
  // own timeout or crash is the user's business (it is in the function's records), not the platform's log.
  if (e.code === "INTERNAL_ERROR" || (e.status >= 500 && e.cause !== undefined)) {
    (e.code === "INTERNAL_ERROR" ? log.error : log.warn)("request failed", {
      request_id: requestId,
      path,
      code: e.code,
      cause: describeError(e.cause ?? e),
    });
  }
  return e;
}

/** The failure envelope of `err` (logged when it is the platform's fault or a dependency's) and its headers. */
function failure(err: unknown, requestId: string, path: string) {
  const e = reportedError(err, requestId, path);
  const body = { error: { code: e.code, message: e.message, type: e.type, request_id: requestId } };
  return { status: e.status, headers: e.headers, body };
}

/** Writes the failure envelope for `err`. */
export function errorResponse(c: Context, err: unknown): Response {
  const { status, headers, body } = failure(err, c.env.requestId, c.req.path);
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
  return c.json(body, status);
}

/** The failure envelope for `err`, outside the Hono app (the routes the edge serves itself). */
export function failureResponse(err: unknown, requestId: string, path: string): Response {
  const { status, headers, body } = failure(err, requestId, path);
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...headers, "content-type": "application/json" },
  });
}

/** The one validation hook: every zod failure becomes 400 VALIDATION_ERROR naming each field. */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target?: string },
): void {
  if (result.success) return;
  const where = result.target === "json" ? "body" : result.target ?? "request";
  const issues = result.error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    return path ? `${path}: ${i.message}` : i.message;
  });
  throw errors.validation(`Invalid ${where}: ${issues.join("; ")}`);
}
