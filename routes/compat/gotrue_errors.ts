import type { AppError } from "../../lib/errors.ts";
import { reportedError } from "../errors.ts";

/** The request header that chooses the error shape, as auth-js sends it. */
export const API_VERSION_HEADER = "x-supabase-api-version";
/** The one dated version of GoTrue's API (auth-js sends it on every request). */
const API_VERSION_2024 = "2024-01-01";

/**
 * GoTrue's status, code and message for the catalogue's reasons, where they differ from the platform's (`code`
 * when GoTrue's error code is not the reason's name: it answers one code with two statuses).
 */
const BY_REASON: Record<string, { status: number; msg?: string; code?: string }> = {
  invalid_credentials: { status: 400, msg: "Invalid login credentials" },
  user_already_exists: { status: 422, msg: "User already registered" },
  email_exists: { status: 422, msg: "A user with this email address has already been registered" },
  weak_password: { status: 422 },
  refresh_token_already_used: { status: 400, msg: "Invalid Refresh Token: Already Used" },
  refresh_token_not_found: { status: 400, msg: "Invalid Refresh Token: Refresh Token Not Found" },
  session_not_found: { status: 403, msg: "Session from session_id claim in JWT does not exist" },
  bad_jwt: { status: 403 },
  bad_json: { status: 400 },
  validation_failed: { status: 422 },
  /** A PKCE exchange without its code or verifier: GoTrue's bad request. */
  pkce_params_missing: { status: 400, code: "validation_failed" },
  email_address_invalid: { status: 400 },
  no_authorization: { status: 401 },
  phone_provider_disabled: { status: 422 },
  email_provider_disabled: { status: 422 },
  otp_expired: { status: 403, msg: "Token has expired or is invalid" },
  over_email_send_rate_limit: { status: 429 },
  flow_state_not_found: { status: 404 },
  flow_state_expired: { status: 422 },
  bad_code_verifier: { status: 400 },
};

/** GoTrue's code for a catalogue code without a reason. */
const BY_CODE: Record<string, string> = {
  VALIDATION_ERROR: "validation_failed",
  UNSUPPORTED_MEDIA_TYPE: "bad_json",
  UNAUTHORIZED: "no_authorization",
  INVALID_TOKEN: "bad_jwt",
  CONFLICT: "conflict",
  rate_limit_exceeded: "over_request_rate_limit",
  REQUEST_TIMEOUT: "request_timeout",
};

/** True when the request asks for the 2024-01-01 API or a later one. */
function dated(version: string | null): boolean {
  return version !== null && /^\d{4}-\d{2}-\d{2}$/.test(version.trim()) && version.trim() >= API_VERSION_2024;
}

/**
 * A failure on `/auth/v1` in GoTrue's shape. Without `X-Supabase-Api-Version` (or before 2024-01-01):
 * `{code: <status>, error_code, msg}`; from 2024-01-01 on (auth-js sends it): `{code: <error code>, error_code,
 * msg}` and the version echoed in the response header, from which auth-js reads `code` as the error code. A refused password adds `weak_password: {reasons}`. A server failure says
 * nothing of its cause.
 */
export function gotrueFailure(err: unknown, req: Request, requestId: string): Response {
  const e: AppError = reportedError(err, requestId, new URL(req.url).pathname);
  const mapped = e.reason === undefined ? undefined : BY_REASON[e.reason];
  const status = mapped?.status ?? (e.code === "INVALID_TOKEN" ? 403 : e.status);
  const code = status >= 500
    ? "unexpected_failure"
    : mapped
    ? mapped.code ?? e.reason!
    : BY_CODE[e.code] ?? (status === 404 ? "not_found" : "unknown");
  const msg = mapped?.msg ?? e.message;
  const headers: Record<string, string> = {
    ...e.headers,
    "content-type": "application/json",
    "x-sb-error-code": code,
  };
  const current = dated(req.headers.get(API_VERSION_HEADER));
  if (current) headers[API_VERSION_HEADER] = API_VERSION_2024;
  const body: Record<string, unknown> = current
    ? { code, error_code: code, msg }
    : { code: status, error_code: code, msg, ...(status >= 500 ? { error_id: requestId } : {}) };
  if (e.reason === "weak_password") body.weak_password = { reasons: e.reasons ?? [] };
  return new Response(JSON.stringify(body), { status, headers });
}
