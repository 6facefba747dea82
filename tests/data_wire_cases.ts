// Table-driven /rest/v1 cases shared by the wire, schema and similar tests: one row is a request and the
// status, body and headers PostgREST answers it with.
import { assertEquals } from "./assert.ts";
import type { TestPlatform } from "./harness.ts";

export interface WireCase {
  name: string;
  method?: string;
  url: string;
  headers?: Record<string, string>;
  /** Sent as is; `content-type: application/json` unless the case sets another. */
  body?: string;
  /** Send the public key (anon) instead of the secret key. */
  anon?: boolean;
  status: number;
  /** The whole JSON body expected, or for errors the PostgREST error object. */
  json?: unknown;
  /** The whole body expected, byte for byte (CSV, plans). */
  text?: string;
  /** Expected header values; null: the header is absent. */
  expect?: Record<string, string | null>;
  /** Patterns header values must match (a value that varies, as Server-Timing's durations). */
  matches?: Record<string, RegExp>;
  /** The body's length in bytes, PostgREST's `Content-Length` (the in-process handler sets no such header). */
  bytes?: number;
  /** The whole body expected as bytes (an image). */
  raw?: Uint8Array;
  /** A check of the body other than equality (a plan's cost, a text it contains); throws when it fails. */
  check?: (body: string) => void;
}

/** A PostgREST error object. */
export const err = (code: string, message: string, details: unknown = null, hint: string | null = null) => ({
  code,
  message,
  details,
  hint,
});

/** Sends one case to /rest/v1 and checks its status, body and headers. */
export async function runWireCase(p: TestPlatform, c: WireCase): Promise<void> {
  const headers: Record<string, string> = { apikey: c.anon ? p.publicKey : p.secretKey, ...c.headers };
  if (c.body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
  const res = await p.fetch(`/rest/v1/${c.url}`, { method: c.method ?? "GET", headers, body: c.body });
  const body = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(body);
  assertEquals(res.status, c.status, text);
  if (c.json !== undefined) assertEquals(JSON.parse(text), c.json);
  if (c.text !== undefined) assertEquals(text, c.text);
  if (c.bytes !== undefined) assertEquals(body.length, c.bytes, `length of ${text}`);
  if (c.raw !== undefined) assertEquals(body, c.raw);
  c.check?.(text);
  for (const [name, value] of Object.entries(c.expect ?? {})) {
    assertEquals(res.headers.get(name), value, name);
  }
  for (const [name, pattern] of Object.entries(c.matches ?? {})) {
    const value = res.headers.get(name);
    if (value === null || !pattern.test(value)) {
      throw new Error(`${name}: ${value} does not match ${pattern}`);
    }
  }
}
