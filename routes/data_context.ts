import type { Context } from "hono";
import { parse as parseCookies } from "hono/utils/cookie";
import type { DataExchange } from "../services/data/data.ts";
import type { AppEnv } from "./env.ts";
import { bearerToken, CONSOLE_COOKIE, consoleToken } from "./middleware/auth.ts";

/**
 * The context a data request's SQL reads (`request.method`, `request.path`, `request.headers`,
 * `request.cookies`), as PostgREST sets it: every header lower-case but `cookie`, whose pairs are
 * `request.cookies`. The console's session (its cookie, or its token as a bearer) is the platform's own
 * credential and never reaches a project's SQL; the project's keys and user tokens do, as in PostgREST.
 */
export function dataExchange(c: Context<AppEnv>, path: string): DataExchange {
  const headers: Record<string, string> = {};
  for (const [name, value] of c.req.raw.headers) {
    if (name === "cookie") continue;
    if (name === "authorization" && consoleToken(bearerToken(value), undefined)) continue;
    headers[name] = value;
  }
  const cookie = c.req.raw.headers.get("cookie");
  const cookies: Record<string, string> = cookie ? { ...parseCookies(cookie) } : {};
  delete cookies[CONSOLE_COOKIE];
  return { method: c.req.method.toUpperCase(), path, headers, cookies };
}
