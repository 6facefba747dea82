import { CONSOLE_COOKIE } from "../middleware/auth.ts";

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * True when a state-changing request carries the console cookie but comes from another origin: a cross-site
 * request forgery, refused wherever the cookie would be honoured (the console, the JSON API, invoke).
 * SameSite=Strict keeps the cookie from other sites; this check also holds against the project hosts
 * (`<ref>.<base domain>`), which are the same site as the console. Browsers send `Origin` on every POST,
 * PUT, PATCH and DELETE; a request with neither `Origin` nor `Sec-Fetch-Site` is not from a browser page
 * (curl, a server), so no forgery. `publicUrl`: the platform's public address, when a proxy rewrites the host.
 */
export function crossSite(req: Request, publicUrl: string | undefined): boolean {
  if (SAFE.has(req.method)) return false;
  const cookie = req.headers.get("cookie");
  if (cookie === null || !cookie.includes(CONSOLE_COOKIE)) return false;
  const origin = req.headers.get("origin");
  if (origin === null) {
    const site = req.headers.get("sec-fetch-site");
    return site !== null && site !== "same-origin";
  }
  const host = req.headers.get("host") ?? new URL(req.url).host;
  const from = hostOf(origin);
  if (from === null) return true; // "null" (a sandboxed frame, a file:) or garbage
  return from !== host.toLowerCase() && (publicUrl === undefined || from !== hostOf(publicUrl));
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return null;
  }
}
