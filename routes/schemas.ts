import { z } from "@hono/zod-openapi";

/** The failure envelope of every route. */
export const ErrorEnvelope = z.object({
  error: z.object({
    code: z.string().openapi({ example: "VALIDATION_ERROR" }),
    message: z.string(),
    type: z.string().openapi({ example: "invalid_request" }),
    request_id: z.string(),
  }),
}).openapi("Error");

/** The success envelope around `data`. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.object({ data, meta: z.null() });
}

/** A JSON 2xx response in the envelope. */
export function ok<T extends z.ZodType>(data: T, description: string) {
  return { content: { "application/json": { schema: envelope(data) } }, description };
}

const ERROR_TEXT: Record<number, string> = {
  400: "Invalid request (VALIDATION_ERROR)",
  401: "Missing or invalid credentials (UNAUTHORIZED, INVALID_TOKEN)",
  403: "The caller's role may not do this (FORBIDDEN)",
  404: "Not found (NOT_FOUND, PROJECT_NOT_FOUND)",
  409: "Conflict with the current state (CONFLICT)",
  413: "Body too large (PAYLOAD_TOO_LARGE)",
  429: "Too many requests (rate_limit_exceeded), with Retry-After",
  503: "A dependency is unavailable (SERVICE_UNAVAILABLE)",
};

/** The error responses a route documents. */
export function failures(...statuses: (keyof typeof ERROR_TEXT)[]) {
  return Object.fromEntries(
    statuses.map((
      s,
    ) => [s, { content: { "application/json": { schema: ErrorEnvelope } }, description: ERROR_TEXT[s]! }]),
  );
}

/** A JSON request body that must be present and be `application/json`. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { body: { content: { "application/json": { schema } }, required: true } };
}

/** Security of routes that take a project key (`apikey` header) and optionally a bearer token. */
export const PROJECT_SECURITY: Record<string, string[]>[] = [{ apikey: [] }, { bearer: [] }];
/** Security of admin routes: a console session token. */
export const ADMIN_SECURITY: Record<string, string[]>[] = [{ console: [] }];
