import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { AppError } from "../../services/errors.ts";
import type { TokenBucket } from "../../services/rate_limit.ts";
import type { AppEnv } from "../env.ts";

/** The client's address: the socket's peer when served by Deno.serve, else "unknown" (in-process calls). */
export function clientAddress(c: Context<AppEnv>): string {
  return remoteHost(c.env.info);
}

/** The peer address of a connection's `info`, or "unknown" without one. */
export function remoteHost(info: Deno.ServeHandlerInfo | undefined): string {
  return (info?.remoteAddr as Deno.NetAddr | undefined)?.hostname ?? "unknown";
}

/** Answers 429 `rate_limit_exceeded` with `Retry-After` once a client has used its tokens in its bucket. */
export function rateLimit(bucketOf: (c: Context<AppEnv>) => TokenBucket, scope: string) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const taken = bucketOf(c).take(`${scope}:${new URL(c.req.url).host}:${clientAddress(c)}`);
    if (!taken.ok) {
      throw new AppError(429, "rate_limit_exceeded", "Too many requests: try again later", {
        headers: { "retry-after": String(taken.retryAfterSeconds) },
      });
    }
    await next();
  });
}

/** The limit on password work per client: sign-up, sign-in and admin login (`AUTH_RATE_PER_MIN`). */
export const passwordRateLimit = rateLimit((c) => c.env.platform.authLimit, "password");
