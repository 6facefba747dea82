import type { Platform } from "../../services/platform.ts";
import type { EdgeEnv } from "../env.ts";

/** Options of {@linkcode edge}. */
export interface EdgeOptions {
  platform: Platform;
  /** Allowed origins, or "*". */
  origins: "*" | string[];
  allowHeaders: string[];
  exposeHeaders: string[];
}

/** What the edge hands every request to: the Hono app's fetch with the request's {@linkcode EdgeEnv}. */
export type EdgeNext = (req: Request, env: EdgeEnv) => Response | Promise<Response>;

// An incoming id is kept when it is short and plain, so that a trace can cross services.
const VALID_ID = /^[\w\-.:]{1,200}$/;

/**
 * edge runs in front of the Hono app, outside its middleware chain, because every async layer of that chain
 * costs throughput on every request: it assigns the request id (kept from `x-request-id` when valid), hands
 * the platform and the id to the app as its env, answers CORS preflights, and adds the CORS and request-id
 * headers to every answer — synchronously when the app answered synchronously.
 */
export function edge(options: EdgeOptions, next: EdgeNext) {
  const allowMethods = "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS";
  const allowHeaders = options.allowHeaders.join(",");
  const exposeHeaders = options.exposeHeaders.join(",");
  const allowOrigin = (origin: string | null): string | null => {
    if (options.origins === "*") return "*";
    return origin && options.origins.includes(origin) ? origin : null;
  };
  const finish = (res: Response, id: string, origin: string | null): Response => {
    const headers = res.headers;
    try {
      headers.set("x-request-id", id);
      if (origin) {
        headers.set("access-control-allow-origin", origin);
        headers.set("access-control-expose-headers", exposeHeaders);
        if (origin !== "*") headers.append("vary", "Origin");
      }
    } catch {
      // Immutable headers (a fetched response passed through as is): answer it unchanged.
    }
    return res;
  };
  return (req: Request, info?: Deno.ServeHandlerInfo): Response | Promise<Response> => {
    const incoming = req.headers.get("x-request-id");
    const id = incoming && VALID_ID.test(incoming) ? incoming : crypto.randomUUID();
    // CORS headers go only to requests that carry an Origin (every CORS request does), as PostgREST's do.
    const requestOrigin = req.headers.get("origin");
    const origin = requestOrigin === null ? null : allowOrigin(requestOrigin);
    if (req.method === "OPTIONS" && req.headers.has("access-control-request-method")) {
      const headers: Record<string, string> = {
        "x-request-id": id,
        "access-control-allow-methods": allowMethods,
        "access-control-allow-headers": allowHeaders,
        "access-control-max-age": "86400",
      };
      if (origin) headers["access-control-allow-origin"] = origin;
      if (origin && origin !== "*") headers["vary"] = "Origin";
      return new Response(null, { status: 204, headers });
    }
    const res = next(req, { platform: options.platform, requestId: id, info });
    return res instanceof Promise ? res.then((r) => finish(r, id, origin)) : finish(res, id, origin);
  };
}
