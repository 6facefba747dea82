import { errors } from "../../lib/errors.ts";
import { CONSOLE_COOKIE } from "../middleware/auth.ts";
import { readBody } from "../middleware/body.ts";
import type { EdgeEnv } from "../env.ts";
import { failureResponse } from "../errors.ts";
import { callFunction, rawResponse } from "../invoke.ts";

/** The prefix of the mount: supabase-js's `functions.invoke(name)` calls `<project URL>/functions/v1/<name>`. */
export const FUNCTIONS_MOUNT = "/functions/v1/";

/** The header that tells supabase-js a failure is the platform's, not the function's (FunctionsRelayError). */
export const RELAY_ERROR_HEADER = "x-relay-error";

/** True for a path of the mount that names a function. */
export function isFunctionMount(path: string): boolean {
  return path.startsWith(FUNCTIONS_MOUNT) && path.length > FUNCTIONS_MOUNT.length &&
    path[FUNCTIONS_MOUNT.length] !== "/";
}

/** A failure of the platform on the mount: the platform's envelope, marked as a relay error. */
export function relayFailure(err: unknown, requestId: string, path: string): Response {
  const res = failureResponse(err, requestId, path);
  res.headers.set(RELAY_ERROR_HEADER, "true");
  return res;
}

/** The Cookie header without the platform's own cookies: a function never sees the console's session. */
function functionCookies(header: string): string | undefined {
  const kept = header.split(";").filter((pair) => {
    const eq = pair.indexOf("=");
    return (eq < 0 ? pair : pair.slice(0, eq)).trim().toLowerCase() !== CONSOLE_COOKIE.toLowerCase();
  });
  return kept.length === 0 ? undefined : kept.join(";").trim();
}

/** The caller's headers as the function receives them (invoke drops the reserved ones). */
function forwardedHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of req.headers) {
    if (name === "cookie") {
      const cookies = functionCookies(value);
      if (cookies) headers.cookie = cookies;
    } else headers[name] = value;
  }
  return headers;
}

/**
 * Serves `/functions/v1/{name}[/*]` as Supabase Edge Functions are served: the function receives the caller's
 * own request — its method, the path from `/{name}` on with the query, its headers (the reserved ones dropped
 * as invoke drops them, and the console's cookie) and its raw body of any type — and its answer goes back as
 * it is, with the platform's headers policy of raw invokes. The caller, roles, rate limit, quota, logs and
 * records are invoke's own ({@linkcode callFunction}); a failure of the platform carries `x-relay-error: true`.
 */
export async function serveFunctionMount(req: Request, env: EdgeEnv, path: string): Promise<Response> {
  try {
    const url = new URL(req.url);
    const rest = path.slice(FUNCTIONS_MOUNT.length - 1); // `/{name}[/…]`, as the router saw it
    const end = rest.indexOf("/", 1);
    const segment = end < 0 ? rest.slice(1) : rest.slice(1, end);
    let name = segment;
    try {
      name = decodeURIComponent(segment);
    } catch {
      throw errors.notFound(`Function "${segment}" does not exist or is not active`);
    }
    const limits = { ...env.body, tooLarge: () => errors.tooLarge(env.body.maxBytes) };
    const result = await callFunction(req, env, name, async () => {
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const bytes = hasBody ? await readBody(req, limits) : new Uint8Array();
      return {
        method: req.method,
        path: `${rest}${url.search}`,
        headers: forwardedHeaders(req),
        body: hasBody && bytes.byteLength > 0 ? bytes : undefined,
      };
    }, true);
    return rawResponse(result, env.requestId);
  } catch (err) {
    return relayFailure(err, env.requestId, path);
  }
}
