import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { ChatStream } from "../services/ai/chat.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import {
  ChatEnvelope,
  ChatRequest,
  EmbeddingsRequest,
  EmbeddingsResult,
  SSE_RESPONSE,
  UsageRow,
} from "./ai_schemas.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

/** True when the request asks to bypass caches (`Cache-Control: no-cache` or `no-store`). */
export function noCache(c: Context): boolean {
  return /\bno-(cache|store)\b/i.test(c.req.header("cache-control") ?? "");
}

/** The SSE response of a chat stream, with the cache status in `x-cache`. */
export function sseResponse(stream: ChatStream): Response {
  return new Response(stream.body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-cache": stream.cache.status,
      ...(stream.cache.similarity !== undefined
        ? { "x-cache-similarity": String(stream.cache.similarity) }
        : {}),
    },
  });
}

/** Counts a signed-in user's AI call against `AI_USER_RATE_PER_MIN` (429 past it). */
export const limitUsers = createMiddleware<AppEnv>(async (c, next) => {
  const { role, user, project } = c.get("caller");
  if (role === "authenticated" && user) c.env.platform.ai.userLimit.take(project.ref, user.sub);
  await next();
});

const AI_FAILURES = failures(400, 401, 403, 503);

/** The AI gateway routes that take a project key (docs/ai.md; session routes are in ai_session.ts). */
export const aiRoutes = new OpenAPIHono<AppEnv>();

aiRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/chat",
    tags: ["AI"],
    summary: "Chat completion with semantic caching",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(ChatRequest),
    responses: {
      200: { content: { "application/json": { schema: ChatEnvelope } }, description: "The reply" },
      ...AI_FAILURES,
    },
  }),
  async (c) => {
    const result = await c.env.platform.ai.chat.chat(c.var.project.ref, c.req.valid("json"), {
      noCache: noCache(c),
      signal: c.req.raw.signal,
    });
    c.header("x-cache", result.cache.status);
    return c.json({ data: result, meta: { cache: result.cache } }, 200);
  },
);

aiRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/chat/stream",
    tags: ["AI"],
    summary: "Streaming chat over SSE in OpenAI's chunk format",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(ChatRequest),
    responses: { 200: SSE_RESPONSE, ...AI_FAILURES },
  }),
  async (c) => {
    const stream = await c.env.platform.ai.chat.stream(c.var.project.ref, c.req.valid("json"), {
      noCache: noCache(c),
      signal: c.req.raw.signal,
    });
    // deno-lint-ignore no-explicit-any
    return sseResponse(stream) as any;
  },
);

aiRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/embeddings",
    tags: ["AI"],
    summary: "Embeddings of one or many inputs",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(EmbeddingsRequest),
    responses: { 200: ok(EmbeddingsResult, "One embedding per input"), ...AI_FAILURES },
  }),
  async (c) => {
    const { input, model, provider } = c.req.valid("json");
    const ai = c.env.platform.ai;
    const texts = typeof input === "string" ? [input] : input;
    const result = await ai.embedder.embed(texts, { model, provider, signal: c.req.raw.signal });
    ai.usage.record(c.var.project.ref, {
      provider: result.provider,
      model: result.model,
      kind: "embeddings",
      usage: result.usage,
    });
    return c.json({
      data: {
        embeddings: result.vectors.map((v) => Array.from(v)),
        model: result.model,
        usage: result.usage,
      },
      meta: null,
    }, 200);
  },
);

aiRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/ai/usage",
    tags: ["AI"],
    summary: "Token usage of the project per day, provider, model and kind (service_role)",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role")] as const,
    request: { query: z.object({ days: z.coerce.number().int().min(1).max(366).default(30) }) },
    responses: { 200: ok(z.array(UsageRow), "Usage rows, newest first"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const ai = c.env.platform.ai;
    await ai.usage.flush();
    return c.json(
      { data: await ai.usage.list(c.var.project.ref, c.req.valid("query").days), meta: null },
      200,
    );
  },
);
