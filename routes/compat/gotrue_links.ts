import type { Context } from "hono";
import type { Session } from "../../services/auth/users.ts";
import type { AppEnv } from "../env.ts";

/**
 * The project's API address for links in mail, or undefined when there is none to trust (the mail then has no
 * link, only its code). With PUBLIC_URL set it is built from it (the address admins see as the project's
 * `api_url`). Without it, the address the request came to, but only when its host names this project
 * (`<ref>.<BASE_DOMAIN>`) or is loopback: a Host header is the requester's to forge, and a link to a host of
 * theirs would carry the victim's token to them.
 */
export function apiUrlOf(c: Context<AppEnv>): string | undefined {
  const { BASE_DOMAIN, PUBLIC_URL } = c.env.platform.config;
  const ref = c.get("project").ref;
  if (PUBLIC_URL) {
    const base = new URL(PUBLIC_URL);
    return `${base.protocol}//${ref}.${BASE_DOMAIN}${base.port ? `:${base.port}` : ""}`;
  }
  const url = new URL(c.req.url);
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const loopback = host === "localhost" || host === "127.0.0.1" || host === "::1";
  return loopback || host === `${ref}.${BASE_DOMAIN.toLowerCase()}` ? url.origin : undefined;
}

/** The implicit flow's landing: the session in the fragment, as GoTrue writes it (auth-js reads it there). */
export function sessionLanding(target: string, session: Session, type: string): string {
  const url = new URL(target);
  url.hash = new URLSearchParams({
    access_token: session.access_token,
    expires_at: String(session.expires_at),
    expires_in: String(session.expires_in),
    refresh_token: session.refresh_token,
    token_type: session.token_type,
    type,
  }).toString();
  return url.toString();
}

/** PKCE's landing: the auth code in the query, for `exchangeCodeForSession`. */
export function codeLanding(target: string, authCode: string): string {
  const url = new URL(target);
  url.searchParams.set("code", authCode);
  return url.toString();
}

/**
 * A failed link's landing, as GoTrue writes it: `error`, `error_code` and `error_description` in the fragment,
 * and also in the query for a PKCE link.
 */
export function errorLanding(target: string, code: string, description: string, pkce: boolean): string {
  const url = new URL(target);
  const params = { error: "access_denied", error_code: code, error_description: description };
  if (pkce) { for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v); }
  url.hash = new URLSearchParams(params).toString();
  return url.toString();
}
