import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { buildMessages, type ChatRequest as ChatBody, promptTokenBound } from "../services/ai/chat.ts";
import { errors } from "../lib/errors.ts";
import { noCache, sseResponse } from "./ai.ts";
import { ChatRequest, ChatResult, SSE_RESPONSE } from "./ai_schemas.ts";
import type { AppEnv } from "./env.ts";
import { bearerToken, credentialsOf, resolveCaller } from "./middleware/auth.ts";
import type { ReservationRequest } from "../services/ai/sessions.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const SessionRequest = z.strictObject({
  budget: z.number().int().min(1).max(100_000_000).optional().openapi({
    description: "Tokens the ticket may spend (service_role only; default AI_SESSION_BUDGET)",
  }),
  ttl_secs: z.number().int().min(10).max(86_400).optional().openapi({
    description: "Seconds the ticket lives (service_role only; default 900)",
  }),
}).openapi("AiSessionRequest");

const Session = z.object({
  ticket: z.string(),
  expires_at: z.string(),
  budget_remaining: z.number().int(),
}).openapi("AiSession");

const TICKET_SECURITY: Record<string, string[]>[] = [{ ticket: [] }];

/** The request's ticket, sent alone as `Authorization: Bearer ait_…`. */
function ticketOf(c: Context<AppEnv>): string {
  if (c.req.header("apikey") !== undefined) {
    throw errors.unauthorized("An AI session ticket is sent alone: remove the apikey header");
  }
  const ticket = bearerToken(c.req.header("authorization"));
  if (!ticket) throw errors.unauthorized('Send the AI session ticket as "Authorization: Bearer <ticket>"');
  return ticket;
}

/**
 * Holds tokens of the request's ticket and runs `call` with the amount held; a call that fails gives it all
 * back. The caller settles what was really used with `settle`.
 */
async function reserved<T>(
  c: Context<AppEnv>,
  ask: ReservationRequest,
  call: (project: string, held: number) => Promise<T>,
) {
  const sessions = c.env.platform.ai.sessions;
  const reservation = await sessions.reserve(ticketOf(c), ask);
  try {
    const result = await call(reservation.project, reservation.reserved);
    return {
      result,
      project: reservation.project,
      settle: (used: number) => sessions.settle(reservation, used),
    };
  } catch (err) {
    await sessions.settle(reservation, 0);
    throw err;
  }
}

/**
 * What a ticket chat reserves: the prompt's token bound plus `max_tokens`, or the rest of the budget when it
 * asks none; at least the bound plus one token of answer. The call is then capped to its reservation.
 */
function chatReservation(body: ChatBody): ReservationRequest {
  const prompt = promptTokenBound(buildMessages(body));
  return { want: prompt + (body.max_tokens ?? Infinity), need: prompt + 1 };
}

/** AI sessions (docs/ai.md): mint a ticket with an API key; then chat, stream and embed with it alone. */
export const aiSessionRoutes = new OpenAPIHono<AppEnv>();

aiSessionRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/{project_id}/session",
    tags: ["AI"],
    summary: "Mint an AI session ticket (15 min, token budget) with the project's API key",
    security: PROJECT_SECURITY,
    request: {
      params: z.object({ project_id: z.string().min(1).max(63) }),
      body: { content: { "application/json": { schema: SessionRequest } }, required: false },
    },
    responses: { 200: ok(Session, "The ticket"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const platform = c.env.platform;
    const project = await platform.projects.get(c.req.valid("param").project_id);
    const caller = await resolveCaller(platform, project, credentialsOf(c.req.raw.headers));
    const body = c.req.header("content-type")?.includes("json") ? c.req.valid("json") : {};
    if (
      (body.budget !== undefined || body.ttl_secs !== undefined) &&
      !["service_role", "admin"].includes(caller.role)
    ) {
      throw errors.forbidden("Only service_role may choose a session's budget or lifetime");
    }
    if (caller.role === "anon" || caller.role === "authenticated") {
      // Anyone holding the public key may mint: bound how fast one client (address, or user) can.
      const addr = (c.env.info?.remoteAddr as Deno.NetAddr | undefined)?.hostname ??
        "local";
      platform.ai.mintLimit.take(project.ref, caller.user?.sub ?? `ip:${addr}`);
    }
    const minted = await platform.ai.sessions.create(project.ref, {
      budget: body.budget,
      ttlSecs: body.ttl_secs,
    });
    return c.json({ data: minted, meta: null }, 200);
  },
);

aiSessionRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/session/chat",
    tags: ["AI"],
    summary: "Chat with an AI session ticket alone; debits its budget",
    security: TICKET_SECURITY,
    request: jsonBody(ChatRequest),
    responses: {
      200: {
        content: {
          "application/json": {
            schema: z.object({
              data: ChatResult.extend({ budget_remaining: z.number().int() }),
              meta: z.object({ cache: ChatResult.shape.cache }),
            }),
          },
        },
        description: "The reply and the budget left",
      },
      ...failures(400, 401, 403, 429, 503),
    },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const { result, settle } = await reserved(
      c,
      chatReservation(body),
      (project, budget) =>
        c.env.platform.ai.chat.chat(project, body, { noCache: noCache(c), signal: c.req.raw.signal, budget }),
    );
    const remaining = await settle(result.usage.total_tokens);
    c.header("x-cache", result.cache.status);
    return c.json({ data: { ...result, budget_remaining: remaining }, meta: { cache: result.cache } }, 200);
  },
);

aiSessionRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/session/chat/stream",
    tags: ["AI"],
    summary: "Streaming chat with an AI session ticket alone; debits its budget when the stream ends",
    security: TICKET_SECURITY,
    request: jsonBody(ChatRequest),
    responses: { 200: SSE_RESPONSE, ...failures(400, 401, 403, 429, 503) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const { result: stream, settle } = await reserved(
      c,
      chatReservation(body),
      (project, budget) =>
        c.env.platform.ai.chat.stream(project, body, {
          noCache: noCache(c),
          signal: c.req.raw.signal,
          budget,
        }),
    );
    stream.usage.then((u) => settle(u.total_tokens)).catch(() => {});
    // deno-lint-ignore no-explicit-any
    return sseResponse(stream) as any;
  },
);

aiSessionRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/session/embed",
    tags: ["AI"],
    summary: "Embed one input with an AI session ticket alone; debits its budget",
    security: TICKET_SECURITY,
    request: jsonBody(z.strictObject({ input: z.string().min(1).max(100_000) }).openapi("AiSessionEmbed")),
    responses: {
      200: ok(
        z.object({ embedding: z.array(z.number()), budget_remaining: z.number().int() }),
        "The embedding",
      ),
      ...failures(400, 401, 403, 429, 503),
    },
  }),
  async (c) => {
    const { input } = c.req.valid("json");
    const ai = c.env.platform.ai;
    // An embedding cannot be cut short: the input's token bound must fit whole.
    const bound = ai.embedder.tokenBound([input]);
    const { result: embedded, project, settle } = await reserved(
      c,
      { want: bound, need: bound },
      () => ai.embedder.embed([input], { signal: c.req.raw.signal }),
    );
    ai.usage.record(project, {
      provider: embedded.provider,
      model: embedded.model,
      kind: "embeddings",
      usage: embedded.usage,
    });
    const remaining = await settle(embedded.usage.total_tokens);
    return c.json({
      data: { embedding: Array.from(embedded.vectors[0]!), budget_remaining: remaining },
      meta: null,
    }, 200);
  },
);

aiSessionRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/ai/session",
    tags: ["AI"],
    summary: "Revoke an AI session ticket, sent alone: it stops working on every instance at once",
    security: TICKET_SECURITY,
    responses: { 200: ok(z.object({ revoked: z.literal(true) }), "The ticket is revoked"), ...failures(401) },
  }),
  async (c) => {
    await c.env.platform.ai.sessions.revoke(ticketOf(c));
    return c.json({ data: { revoked: true as const }, meta: null }, 200);
  },
);
