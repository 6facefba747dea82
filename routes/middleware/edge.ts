import { createMiddleware } from "hono/factory";
import type { Platform } from "../../services/platform.ts";
import type { AppEnv } from "../env.ts";

/** Options of {@linkcode edge}. */
export interface EdgeOptions {
  platform: Platform;
  /** Allowed origins, or "*". */
  origins: "*" | string[];
  allowHeaders: string[];
  exposeHeaders: string[];
}

// An incoming id is kept when it is short and plain, so that a trace can cross services.
const VALID_ID = /^[\w\-.:]{1,200}$/;

/**
 * edge is the first middleware of every request, in one layer because each async layer costs throughput:
 * it assigns the request id (kept from `x-request-id` when valid), makes the platform available, answers CORS
 * preflights and adds the CORS and request-id headers to every answer.
 */
export function edge(options: EdgeOptions) {
  const allowMethods = "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS";
  const allowHeaders = options.allowHeaders.join(",");
  const exposeHeaders = options.exposeHeaders.join(",");
  const allowOrigin = (origin: string | undefined): string | null => {
    if (options.origins === "*") return "*";
    return origin && options.origins.includes(origin) ? origin : null;
  };
  return createMiddleware<AppEnv>(async (c, next) => {
    const incoming = c.req.header("x-request-id");
    const id = incoming && VALID_ID.test(incoming) ? incoming : crypto.randomUUID();
    c.set("requestId", id);
    c.set("platform", options.platform);
    const origin = allowOrigin(c.req.header("origin"));
    if (c.req.method === "OPTIONS" && c.req.header("access-control-request-method")) {
      const headers: Record<string, string> = {
        "x-request-id": id,
        "access-control-allow-methods": allowMethods,
        "access-control-allow-headers": allowHeaders,
        "access-control-max-age": "86400",
      };
      if (origin) headers["access-control-allow-origin"] = origin;
      if (origin && origin !== "*") headers["vary"] = "Origin";
      return c.body(null, 204, headers);
    }
    await next();
    const headers = c.res.headers;
    headers.set("x-request-id", id);
    if (origin) {
      headers.set("access-control-allow-origin", origin);
      headers.set("access-control-expose-headers", exposeHeaders);
      if (origin !== "*") headers.append("vary", "Origin");
    }
  });
}
