// supabase-js against a real platform on a real socket: the helpers of the realtime suites.
import { createClient, type RealtimeChannel, type SupabaseClient } from "@supabase/supabase-js";
import { assertEquals } from "./assert.ts";
import type { ServedPlatform } from "./client_fixture.ts";

/** Waits until `check` holds (fails after `ms`). */
export async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${check}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs SQL as the project owner (POST /v1/sql with the secret key). */
export async function sql(s: ServedPlatform, query: string): Promise<void> {
  const res = await fetch(`${s.url}/v1/sql`, {
    method: "POST",
    headers: { apikey: s.p.secretKey, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  assertEquals(res.status, 200, await res.text());
}

/** A user's session from /v1/auth. */
export interface Session {
  access_token: string;
  refresh_token: string;
}

/** Signs a new user up on /v1/auth. */
export async function signUp(s: ServedPlatform, email: string): Promise<Session> {
  const res = await fetch(`${s.url}/v1/auth/signup`, {
    method: "POST",
    headers: { apikey: s.p.publicKey, "content-type": "application/json" },
    body: JSON.stringify({ email, password: "correct horse 1" }),
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return body.data.session;
}

/** Refreshes a session (its refresh token rotates). */
export async function refresh(s: ServedPlatform, session: Session): Promise<Session> {
  const res = await fetch(`${s.url}/v1/auth/token`, {
    method: "POST",
    headers: { apikey: s.p.publicKey, "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "refresh_token", refresh_token: session.refresh_token }),
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return body.data.session;
}

/**
 * A supabase-js client as the user whose token `token()` returns (the API key alone when it returns null). The
 * client reads its token asynchronously: a channel subscribed in the same tick as createClient would join
 * before it is known (an app signs in first), so the token is awaited here.
 */
export async function client(
  s: ServedPlatform,
  token: () => string | null = () => null,
  vsn?: string,
): Promise<SupabaseClient> {
  const c = createClient(s.url, s.p.publicKey, {
    accessToken: () => Promise.resolve(token()),
    realtime: { ...(vsn ? { vsn } : {}), heartbeatIntervalMs: 5_000 },
  });
  await c.realtime.setAuth();
  return c;
}

/** Subscribes a channel; rejects on anything but SUBSCRIBED. */
export function subscribed(channel: RealtimeChannel): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.subscribe((status, err) => {
      if (status === "SUBSCRIBED") resolve();
      else reject(new Error(`${status}: ${err?.message}`));
    });
  });
}
