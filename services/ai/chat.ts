import type OpenAI from "openai";
import { describeError, log } from "../log.ts";
import type { Embedder } from "./embedder.ts";
import { type ChatCall, type ChatMessage, providerError, type Providers, type Usage } from "./providers.ts";
import { partitionKey, type SemanticCache } from "./semantic_cache.ts";
import type { UsageLog } from "./usage_log.ts";

/** A chat request (decisions §10). */
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

/** A chat answer (decisions §10). */
export interface ChatResult {
  message: { role: "assistant"; content: string };
  model: string;
  usage: Usage;
  cache: CacheInfo;
}

/** What a cached answer keeps. */
export interface CachedAnswer {
  content: string;
  model: string;
}

/** Options of a chat call. */
export interface ChatOptions {
  /** Bypass the cache (`Cache-Control: no-cache`). */
  noCache?: boolean;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
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

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
const encoder = new TextEncoder();

/** The messages sent to the provider: the system prompt first, then the conversation. */
export function buildMessages(req: ChatRequest): ChatMessage[] {
  return req.system !== undefined ? [{ role: "system", content: req.system }, ...req.messages] : req.messages;
}

/**
 * ChatService answers chats through a provider, with the semantic cache in front (decisions §10): the
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

  private call(req: ChatRequest, model: string): ChatCall {
    const call: ChatCall = { model, messages: buildMessages(req) };
    if (req.temperature !== undefined) call.temperature = req.temperature;
    if (req.max_tokens !== undefined) call.max_tokens = req.max_tokens;
    return call;
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
        max_tokens: call.max_tokens,
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
    const call = this.call(req, req.model ?? provider.config.chatModel);
    const plan = await this.plan(project, provider.name, call, req, options);
    const hit = plan ? this.deps.cache.lookup(project, plan.partition, plan.text, plan.embedding) : null;
    if (hit) {
      this.deps.usage.record(project, {
        provider: provider.name,
        model: hit.value.model,
        kind: "chat",
        usage: ZERO,
        cacheHit: true,
      });
    }
    return { provider, call, plan, hit };
  }

  /** One chat answer, from the cache or the provider. */
  async chat(project: string, req: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    const { provider, call, plan, hit } = await this.prepare(project, req, options);
    if (hit) {
      return {
        message: { role: "assistant", content: hit.value.content },
        model: hit.value.model,
        usage: ZERO,
        cache: { status: "hit", similarity: round(hit.similarity) },
      };
    }
    const answer = await provider.chat(call, options.signal);
    if (plan) {
      this.deps.cache.store(project, plan.partition, plan.text, plan.embedding, {
        content: answer.content,
        model: answer.model,
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
    };
  }

  /**
   * A streamed chat: SSE frames of OpenAI chunks ending with `data: [DONE]`. The provider call starts before
   * this resolves, so that its failures are ordinary error responses; cancelling the body (the client went
   * away) aborts the provider request.
   */
  async stream(project: string, req: ChatRequest, options: ChatOptions = {}): Promise<ChatStream> {
    const { provider, call, plan, hit } = await this.prepare(project, req, options);
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
    const { promise: usageDone, resolve: settle } = Promise.withResolvers<Usage>();
    let content = "";
    let model = call.model;
    let usage: Usage | undefined;
    let finished = false;
    let settled = false;
    const finish = (complete: boolean) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener("abort", onAbort);
      const spent = usage ?? estimateUsage(call.messages, content);
      if (complete && finished && plan) {
        this.deps.cache.store(project, plan.partition, plan.text, plan.embedding, { content, model });
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
            finish(true);
            return;
          }
          const chunk: OpenAI.ChatCompletionChunk = next.value;
          if (chunk.model) model = chunk.model;
          for (const choice of chunk.choices ?? []) {
            content += choice.delta?.content ?? "";
            if (choice.finish_reason) finished = true;
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
          finish(false);
        }
      },
      cancel() {
        upstream.abort();
        finish(false);
      },
    });
    return { cache: { status: "miss" }, body, usage: usageDone };
  }
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
    chunk({}, "stop"),
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`);
  frames.push("data: [DONE]\n\n");
  return new ReadableStream({
    start(controller) {
      for (const f of frames) controller.enqueue(encoder.encode(f));
      controller.close();
    },
  });
}
