import { z } from "@hono/zod-openapi";

/** A chat message. */
export const ChatMessage = z.strictObject({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string().max(200_000),
}).openapi("AiChatMessage");

/** The chat request (docs/ai.md). */
export const ChatRequest = z.strictObject({
  messages: z.array(ChatMessage).min(1).max(500),
  model: z.string().min(1).max(200).optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().min(1).max(1_000_000).optional(),
  system: z.string().max(200_000).optional(),
  provider: z.string().min(1).max(32).optional().openapi({
    description: "A configured provider by name (AI_PROVIDERS); default: the first configured",
  }),
  cache: z.boolean().optional().openapi({ description: "false bypasses the semantic cache" }),
}).openapi("AiChatRequest");

const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
}).openapi("AiUsage");

const CacheInfo = z.object({
  status: z.enum(["hit", "miss"]),
  similarity: z.number().optional(),
}).openapi("AiCacheInfo");

/** The chat answer. */
export const ChatResult = z.object({
  message: z.object({ role: z.literal("assistant"), content: z.string() }),
  model: z.string(),
  usage: Usage,
  cache: CacheInfo,
  finish_reason: z.string().optional().openapi({
    description: "Why the answer ended, as the provider said: stop (complete), length (cut at max_tokens)…",
  }),
}).openapi("AiChatResult");

/** The chat envelope: `meta.cache` repeats what `data.cache` says. */
export const ChatEnvelope = z.object({ data: ChatResult, meta: z.object({ cache: CacheInfo }) });

/** One or many inputs to embed. */
export const EmbeddingsRequest = z.strictObject({
  input: z.union([z.string().max(100_000), z.array(z.string().max(100_000)).min(1).max(2048)]),
  model: z.string().min(1).max(200).optional(),
  provider: z.string().min(1).max(32).optional(),
}).openapi("AiEmbeddingsRequest");

/** Embeddings with the model that made them. */
export const EmbeddingsResult = z.object({
  embeddings: z.array(z.array(z.number())),
  model: z.string(),
  usage: Usage,
}).openapi("AiEmbeddingsResult");

/** A day of usage. */
export const UsageRow = z.object({
  day: z.string(),
  provider: z.string(),
  model: z.string(),
  kind: z.string(),
  requests: z.number().int(),
  cache_hits: z.number().int(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
}).openapi("AiUsageRow");

/** SSE of OpenAI chunks. */
export const SSE_RESPONSE = {
  content: { "text/event-stream": { schema: z.string() } },
  description: "OpenAI chat.completion.chunk frames (`data: {…}`), then `data: [DONE]`; header x-cache",
};
