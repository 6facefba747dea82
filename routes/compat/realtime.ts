import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { errors } from "../../lib/errors.ts";
import { looksLikeJwt } from "../../services/auth/tokens.ts";
import { CHANNEL_NAME } from "../../services/realtime/protocol.ts";
import type { OutsideBroadcast } from "../../services/realtime/service.ts";
import type { AppEnv } from "../env.ts";
import { bearerToken } from "../middleware/auth.ts";
import { projectOf } from "../middleware/project.ts";
import { reportedError } from "../errors.ts";

/** The prefix of realtime's HTTP API: realtime-js derives `<project URL>/realtime/v1/api/broadcast` from its socket. */
export const REALTIME_API = "/realtime/v1/api/";
const BROADCAST = "/realtime/v1/api/broadcast";
/** Messages one batch may carry. */
const MAX_MESSAGES = 100;

const Topic = z.string().regex(CHANNEL_NAME, "must be 1-255 letters, digits or _-:.@/");
const Event = z.string().min(1).max(255);
const Batch = z.object({
  messages: z.array(z.object({
    topic: Topic,
    event: Event,
    payload: z.unknown().optional(),
    private: z.boolean().optional(),
  })).min(1).max(MAX_MESSAGES),
});

/**
 * A failure on realtime's HTTP API as realtime-js reads it (`{message}`: `httpSend()` rejects with it), with the
 * platform's status; a server failure says nothing of its cause.
 */
export function realtimeApiFailure(err: unknown, requestId: string, path: string): Response {
  const e = reportedError(err, requestId, path);
  return Response.json({ message: e.message, code: e.code }, { status: e.status, headers: e.headers });
}

/**
 * Broadcast over HTTP, as realtime-js sends it (docs/realtime.md, "Broadcast over HTTP"): `send()` on a channel
 * that is not joined posts a batch, `httpSend()` posts one event with a JSON or binary body. Both answer 202 and
 * go through the same hub, checks and private-channel policies as a broadcast over the socket.
 */
export const realtimeApiRoutes = new Hono<AppEnv>();
realtimeApiRoutes.onError((err, c) => realtimeApiFailure(err, c.env.requestId, c.req.path));

realtimeApiRoutes.post(BROADCAST, async (c) => {
  const parsed = Batch.safeParse(await jsonOf(c));
  if (!parsed.success) throw errors.validation(`Invalid broadcast batch: ${issuesOf(parsed.error)}`);
  await send(
    c,
    parsed.data.messages.map((m) => ({
      name: m.topic,
      event: m.event,
      payload: m.payload ?? {},
      private: m.private ?? false,
    })),
  );
  return c.body(null, 202);
});

realtimeApiRoutes.post(`${BROADCAST}/:topic/events/:event`, async (c) => {
  const topic = Topic.safeParse(c.req.param("topic"));
  const event = Event.safeParse(c.req.param("event"));
  if (!topic.success || !event.success) {
    throw errors.validation(
      "Invalid broadcast: topic must be 1-255 letters, digits or _-:.@/, event 1-255 characters",
    );
  }
  const query = new URL(c.req.url).searchParams;
  const binary = (c.req.header("content-type") ?? "").toLowerCase().startsWith("application/octet-stream");
  const payload = binary ? new Uint8Array(await c.req.arrayBuffer()) : await jsonOf(c);
  await send(c, [{
    name: topic.data,
    event: event.data,
    payload,
    private: query.get("private") === "true",
    persist: persistOf(query),
  }]);
  return c.body(null, 202);
});

/** Authenticates as the socket does (the key, and the user's token when the bearer is one) and sends. */
async function send(c: Context<AppEnv>, messages: OutsideBroadcast[]): Promise<void> {
  const { realtime } = c.env.platform;
  const project = await projectOf(c);
  const bearer = bearerToken(c.req.header("authorization"));
  const credentials = await realtime.authenticate(
    project,
    c.req.header("apikey") ?? new URL(c.req.url).searchParams.get("apikey") ?? undefined,
    bearer && looksLikeJwt(bearer) ? bearer : undefined,
  );
  await realtime.broadcastFrom(project, credentials, messages);
}

/** `persist=true` (the longest time) or `persist[ttl]=<seconds>`, as httpSend() writes them. */
function persistOf(query: URLSearchParams): true | number | undefined {
  const ttl = query.get("persist[ttl]");
  if (ttl !== null) {
    const seconds = Number(ttl);
    if (!Number.isInteger(seconds) || seconds < 1) {
      throw errors.validation("persist[ttl] must be a positive integer");
    }
    return seconds;
  }
  const persist = query.get("persist");
  if (persist === null || persist === "false") return undefined;
  if (persist === "true") return true;
  throw errors.validation("persist must be true or false");
}

async function jsonOf(c: Context<AppEnv>): Promise<unknown> {
  try {
    return JSON.parse(await c.req.text());
  } catch {
    throw errors.validation("Request body is not valid JSON");
  }
}

function issuesOf(error: z.ZodError): string {
  return error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    return path ? `${path}: ${i.message}` : i.message;
  }).join("; ");
}
