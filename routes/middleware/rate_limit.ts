import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Cidr } from "../../lib/ip.ts";
import { errors } from "../../lib/errors.ts";
import type { SharedRateLimit, Take } from "../../services/limits/rate_limit.ts";
import type { AppEnv, EdgeEnv } from "../env.ts";
import { clientAddress as addressOf, parseTrustedProxies } from "../../lib/client_address.ts";

// TRUSTED_PROXIES as parsed, for the configuration it was parsed from (validated at start-up).
let trusted: { list: string; ranges: Cidr[] } | undefined;

/**
 * The client's address, as rate limits key it: the socket's peer, or the client a trusted proxy forwarded for
 * (`TRUSTED_PROXIES`); never the Host header or anything else a client sets. "unknown" for in-process calls.
 */
export function clientAddress(c: Context<AppEnv>): string {
  return clientAddressOf(c.env, c.req.raw.headers);
}

/**
 * {@linkcode clientAddress} for the paths served in front of Hono (invoke). `X-Forwarded-For` is looked at
 * only when there are trusted proxies: without them it counts for nothing.
 */
export function clientAddressOf(env: EdgeEnv, headers: Headers): string {
  const list = env.platform.config.TRUSTED_PROXIES;
  if (trusted?.list !== list) trusted = { list, ranges: parseTrustedProxies(list) ?? [] };
  const forwardedFor = trusted.ranges.length > 0 ? headers.get("x-forwarded-for") ?? undefined : undefined;
  return addressOf(peerOf(env.info), forwardedFor, trusted.ranges);
}

function peerOf(info: { remoteAddr: Deno.Addr } | undefined): string | undefined {
  return (info?.remoteAddr as Deno.NetAddr | undefined)?.hostname;
}

function refuse(taken: Take): void {
  if (!taken.ok) {
    throw errors.rateLimited("Too many requests: try again later", taken.retryAfterSeconds);
  }
}

/** Answers 429 `rate_limit_exceeded` with `Retry-After` once a client has used its actions of the minute. */
export function rateLimit(limitOf: (c: Context<AppEnv>) => SharedRateLimit, scope: string) {
  return createMiddleware<AppEnv>(async (c, next) => {
    refuse(limitOf(c).take(`${scope}:${clientAddress(c)}`));
    await next();
  });
}

/** The limit on password work per client address: sign-up, sign-in and admin login (`AUTH_RATE_PER_MIN`). */
export const passwordRateLimit = rateLimit((c) => c.env.platform.authLimit, "password");

/**
 * Takes one attempt of {@linkcode passwordRateLimit}'s limit (the same key): for the console's sign-in form,
 * which renders its refusal as a page rather than the envelope.
 */
export function takePasswordAttempt(c: Context<AppEnv>): void {
  refuse(c.env.platform.authLimit.take(`password:${clientAddress(c)}`));
}

/**
 * Runs a password sign-in under the limit of its account (`AUTH_RATE_PER_MIN` failed attempts), which holds
 * however many addresses the guesses come from; a successful attempt gives its token back.
 */
export async function accountLimited<T>(
  c: Context<AppEnv>,
  account: string,
  attempt: () => Promise<T>,
): Promise<T> {
  const limit = c.env.platform.authLimit;
  const key = `account:${account.toLowerCase()}`;
  refuse(limit.take(key));
  const result = await attempt();
  limit.giveBack(key);
  return result;
}
