import type OpenAI from "openai";
import { describeError, log } from "../../lib/log.ts";
import type { Embedder } from "./embedder.ts";
import { type ChatCall, type ChatMessage, providerError, type Providers, type Usage } from "./providers.ts";
import { partitionKey, type SemanticCache } from "./semantic_cache.ts";
import { quotaExceeded } from "./sessions.ts";
import type { UsageLog } from "./usage_log.ts";

/** A chat request (docs/ai.md). */
export interface ChatRequest {
  messages: ChatMessage[];
  model?: string;
  temperature?: number;
  max_tokens?: number;
  /** A system prompt put before the messages. */
  system?: string;
  /** A configured provider by name. */
  provider?: string;
  /** false bypasses the semantic cache. */
  cache?: boolean;
}

/** What the response says about the cache. */
export interface CacheInfo {
  status: "hit" | "miss";
  similarity?: number;
}

/** A chat answer (docs/ai.md). */
export interface ChatResult {
  message: { role: "assistant"; content: string };
  model: string;
  usage: Usage;
  cache: CacheInfo;
  /** Why the answer ended: `stop` (complete), `length` (cut at `max_tokens`)…, as the provider said. */
  finish_reason?: string;
}

/** What a cached answer keeps. */
export interface CachedAnswer {
  content: string;
  model: string;
  /** The usage of the call that produced it: what answering it again would cost. */
  usage: Usage;
  finishReason: string | null;
}

/** Options of a chat call. */
export interface ChatOptions {
  /** Bypass the cache (`Cache-Control: no-cache`). */
  noCache?: boolean;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
  /**
   * Tokens the call may spend at most (an AI session's reservation). The provider's `max_tokens` is lowered to
   * what is left after {@linkcode promptTokenBound}; a stream is cut if the provider goes past it; a cached
   * answer is served only if its recorded usage fits.
   */
  budget?: number;
}

/** A streamed answer: the SSE body, and the usage once the stream ends (or is cancelled). */
export interface ChatStream {
  cache: CacheInfo;
  body: ReadableStream<Uint8Array>;
  usage: Promise<Usage>;
}

interface CachePlan {
  partition: string;
  text: string;
  embedding: Float32Array;
}

/** A provider call with what the budget did to it. */
interface BoundedCall {
  call: ChatCall;
  /** True when `max_tokens` was lowered below what the request asked (or set when it asked none). */
  capped: boolean;
}

// What a chat template may add around the text: role markers and separators per message, reply priming per
// call (OpenAI's ChatML spends 3-4 per message and 3 per call; Llama 3, Qwen and Gemma templates about 5).
const TEMPLATE_TOKENS_PER_MESSAGE = 8;
const TEMPLATE_TOKENS_PER_CALL = 16;

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
const encoder = new TextEncoder();

/**
 * An upper bound of the prompt tokens a provider can count for `messages`: one token per UTF-8 byte (byte-level
 * BPE, SentencePiece with byte fallback and WordPiece never spend more) plus the chat template's tokens. It is
 * pessimistic on purpose (English runs about four bytes a token): a ticket call is admitted and capped on it,
 * then debited what the provider reports.
 */
export function promptTokenBound(messages: ChatMessage[]): number {
  return messages.reduce(
    (n, m) => n + encoder.encode(m.content).length + TEMPLATE_TOKENS_PER_MESSAGE,
    TEMPLATE_TOKENS_PER_CALL,
  );
}

/** The messages sent to the provider: the system prompt first, then the conversation. */
export function buildMessages(req: ChatRequest): ChatMessage[] {
  return req.system !== undefined ? [{ role: "system", content: req.system }, ...req.messages] : req.messages;
}

/**
 * ChatService answers chats through a provider, with the semantic cache in front: the
 * partition is every input but the last user message, and a hit needs the cosine threshold on that message.
 */
export class ChatService {
  constructor(
    private readonly deps: {
      providers: Providers;
      embedder: Embedder;
      cache: SemanticCache<CachedAnswer>;
      usage: UsageLog;
    },
  ) {}

  /**
   * The provider call. Under a budget, `max_tokens` is what the budget leaves after the prompt's bound (or
   * the request's, when lower): the completion cannot spend more than was reserved.
   */
  private call(req: ChatRequest, model: string, budget: number | undefined): BoundedCall {
    const call: ChatCall = { model, messages: buildMessages(req) };
    if (req.temperature !== undefined) call.temperature = req.temperature;
    if (req.max_tokens !== undefined) call.max_tokens = req.max_tokens;
    if (budget === undefined) return { call, capped: false };
    const room = Math.floor(budget) - promptTokenBound(call.messages);
    if (room < 1) throw quotaExceeded("AI session budget is too low for this prompt: mint a new session");
    if (req.max_tokens !== undefined && req.max_tokens <= room) return { call, capped: false };
    call.max_tokens = room;
    return { call, capped: true };
  }

  private async plan(
    project: string,
    provider: string,
    call: ChatCall,
    req: ChatRequest,
    options: ChatOptions,
  ) {
    const last = call.messages.at(-1);
    if (req.cache === false || options.noCache || !last || last.role !== "user") return null;
    try {
      const embedded = await this.deps.embedder.embed([last.content], { signal: options.signal });
      if (embedded.provider !== "local") {
        this.deps.usage.record(project, {
          provider: embedded.provider,
          model: embedded.model,
          kind: "embeddings",
          usage: embedded.usage,
        });
      }
      const partition = await partitionKey({
        project,
        provider,
        model: call.model,
        embeddingModel: embedded.model,
        temperature: call.temperature,
        // What the caller asked for, not a budget's cap: a capped call shares the partition of its request,
        // and only answers that are complete under the cap are stored there (see mayStore).
        max_tokens: req.max_tokens,
        context: call.messages.slice(0, -1),
      });
      return { partition, text: last.content, embedding: embedded.vectors[0]! } satisfies CachePlan;
    } catch (err) {
      // The cache is an optimisation: when the embedder fails, answer without it.
      log.warn("ai cache skipped: embedding failed", { project, cause: describeError(err) });
      return null;
    }
  }

  /**
   * What a chat and a streamed chat both start with: the provider, the call, the cache plan and, when the cache
   * answers, the hit (its zero-token use recorded).
   */
  private async prepare(project: string, req: ChatRequest, options: ChatOptions) {
    const provider = this.deps.providers.get(req.provider);
    const { call, capped } = this.call(req, req.model ?? provider.config.chatModel, options.budget);
    const plan = await this.plan(project, provider.name, call, req, options);
    // Under a budget, a cached answer is served only if producing it fit: the cache is no way around it.
    const budget = options.budget;
    const fits = budget === undefined ? undefined : (a: CachedAnswer) => a.usage.total_tokens <= budget;
    const hit = plan
      ? this.deps.cache.lookup(project, plan.partition, plan.text, plan.embedding, fits)
      : null;
    if (hit) {
      this.deps.usage.record(project, {
        provider: provider.name,
        model: hit.value.model,
        kind: "chat",
        usage: ZERO,
        cacheHit: true,
      });
    }
    return { provider, call, capped, plan, hit };
  }

  /** One chat answer, from the cache or the provider. */
  async chat(project: string, req: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    const { provider, call, capped, plan, hit } = await this.prepare(project, req, options);
    if (hit) {
      return {
        message: { role: "assistant", content: hit.value.content },
        model: hit.value.model,
        usage: ZERO,
        cache: { status: "hit", similarity: round(hit.similarity) },
        ...(hit.value.finishReason ? { finish_reason: hit.value.finishReason } : {}),
      };
    }
    const answered = await provider.chat(call, options.signal);
    // A server that reports no usage is counted by estimate, as a stream is: a ticket never chats for free.
    const answer = answered.usage.total_tokens > 0
      ? answered
      : { ...answered, usage: estimateUsage(call.messages, answered.content) };
    if (plan && mayStore(capped, answer.finishReason)) {
      this.deps.cache.store(project, plan.partition, plan.text, plan.embedding, {
        content: answer.content,
        model: answer.model,
        usage: answer.usage,
        finishReason: answer.finishReason,
      });
    }
    this.deps.usage.record(project, {
      provider: provider.name,
      model: answer.model,
      kind: "chat",
      usage: answer.usage,
    });
    return {
      message: { role: "assistant", content: answer.content },
      model: answer.model,
      usage: answer.usage,
      cache: { status: "miss" },
      ...(answer.finishReason ? { finish_reason: answer.finishReason } : {}),
    };
  }

  /**
   * A streamed chat: SSE frames of OpenAI chunks ending with `data: [DONE]`. The provider call starts before
   * this resolves, so that its failures are ordinary error responses; cancelling the body (the client went
   * away) aborts the provider request. Under a budget, a provider that streams past `max_tokens` is cut there:
   * the gateway stops the provider request and ends the stream with `finish_reason: "length"`.
   */
  async stream(project: string, req: ChatRequest, options: ChatOptions = {}): Promise<ChatStream> {
    const { provider, call, capped, plan, hit } = await this.prepare(project, req, options);
    if (hit) {
      return {
        cache: { status: "hit", similarity: round(hit.similarity) },
        body: cachedStream(hit.value),
        usage: Promise.resolve(ZERO),
      };
    }

    const upstream = new AbortController();
    const onAbort = () => upstream.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let chunks: AsyncIterator<OpenAI.ChatCompletionChunk>;
    try {
      chunks = (await provider.stream(call, upstream.signal))[Symbol.asyncIterator]();
    } catch (err) {
      options.signal?.removeEventListener("abort", onAbort);
      throw err;
    }
    const budget = options.budget;
    // Under a budget, the content chunks forwarded at most: a provider sends at least one token per chunk.
    const limit = budget !== undefined ? call.max_tokens : undefined;
    const { promise: usageDone, resolve: settle } = Promise.withResolvers<Usage>();
    let content = "";
    let pieces = 0;
    let model = call.model;
    let usage: Usage | undefined;
    let finishReason: string | null = null;
    let settled = false;
    const finish = (outcome: "done" | "failed" | "cancelled" | "cut") => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener("abort", onAbort);
      let spent = usage ?? estimateUsage(call.messages, content);
      if (budget !== undefined && outcome === "cut") {
        // The provider went past the cap: count the whole reservation, the most it may have cost.
        spent = { prompt_tokens: budget - limit!, completion_tokens: limit!, total_tokens: budget };
      } else if (budget !== undefined && !usage && spent.total_tokens > budget) {
        spent = { ...spent, total_tokens: budget }; // an estimate never exceeds what was reserved
      }
      if (outcome === "done" && finishReason && plan && mayStore(capped, finishReason)) {
        this.deps.cache.store(project, plan.partition, plan.text, plan.embedding, {
          content,
          model,
          usage: spent,
          finishReason,
        });
      }
      this.deps.usage.record(project, { provider: provider.name, model, kind: "chat", usage: spent });
      settle(spent);
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) {
            controller.enqueue(encoder.encode("data: [DONE]\n\n"));
            controller.close();
            finish("done");
            return;
          }
          const chunk: OpenAI.ChatCompletionChunk = next.value;
          if (chunk.model) model = chunk.model;
          const delta = chunk.choices?.map((c) => c.delta?.content ?? "").join("") ?? "";
          if (delta && limit !== undefined && pieces >= limit) {
            upstream.abort();
            controller.enqueue(encoder.encode(`data: ${JSON.stringify(lengthChunk(chunk, model))}\n\n`));
            controller.enqueue(encoder.encode("data: [DONE]\n\n"));
            controller.close();
            finish("cut");
            return;
          }
          if (delta) pieces++;
          content += delta;
          for (const choice of chunk.choices ?? []) {
            if (choice.finish_reason) finishReason = choice.finish_reason;
          }
          if (chunk.usage) usage = { ...ZERO, ...chunk.usage };
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
        } catch (err) {
          if (upstream.signal.aborted) return;
          const e = providerError(provider.name, err);
          log.warn("ai stream failed", { project, provider: provider.name, code: e.code });
          controller.enqueue(
            encoder.encode(`data: ${JSON.stringify({ error: { code: e.code, message: e.message } })}\n\n`),
          );
          controller.close();
          finish("failed");
        }
      },
      cancel() {
        upstream.abort();
        finish("cancelled");
      },
    });
    return { cache: { status: "miss" }, body, usage: usageDone };
  }
}

/**
 * Whether an answer may be cached in the partition of its request. An answer of a call whose `max_tokens` a
 * budget lowered is stored only when complete (`stop`): cut short, it would be served to callers who asked
 * for more. A complete one is what the uncapped call could have answered.
 */
function mayStore(capped: boolean, finishReason: string | null): boolean {
  return !capped || finishReason === "stop";
}

/** The last chunk of a stream the gateway cut at the budget's cap. */
function lengthChunk(like: OpenAI.ChatCompletionChunk, model: string) {
  return {
    id: like.id,
    object: "chat.completion.chunk",
    created: like.created,
    model,
    choices: [{ index: 0, delta: {}, finish_reason: "length" }],
  };
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** Usage estimated at four characters a token, when a provider streams without reporting it. */
export function estimateUsage(messages: ChatMessage[], completion: string): Usage {
  const prompt = Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4);
  const out = Math.ceil(completion.length / 4);
  return { prompt_tokens: prompt, completion_tokens: out, total_tokens: prompt + out };
}

function cachedStream(answer: CachedAnswer): ReadableStream<Uint8Array> {
  const id = `chatcmpl-cache-${crypto.randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, string>, finish: string | null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: answer.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const frames = [
    chunk({ role: "assistant", content: answer.content }, null),
    chunk({}, answer.finishReason ?? "stop"),
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`);
  frames.push("data: [DONE]\n\n");
  return new ReadableStream({
    start(controller) {
      for (const f of frames) controller.enqueue(encoder.encode(f));
      controller.close();
    },
  });
}
