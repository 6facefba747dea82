import type { Routes, Schemas } from "./api_types.ts";
import { errorFromResponse, networkError, PlatformError } from "./errors.ts";
import { type CallOptions, type Http, pathOf } from "./http.ts";
import { readSse } from "./sse.ts";

/** A turn of a conversation. */
export type ChatMessage = Schemas["AiChatMessage"];
/** Options of `chat`: model, temperature, max_tokens, system, provider, cache. */
export type ChatOptions = Omit<Schemas["AiChatRequest"], "messages">;
/** The answer of `chat`. */
export type ChatResult = Schemas["AiChatResult"];
/** Options of `chatStream`; `signal` stops the stream and the provider's request behind it. */
export interface ChatStreamOptions {
  model?: string;
  temperature?: number;
  max_tokens?: number;
  signal?: AbortSignal;
}
/** One OpenAI `chat.completion.chunk` of a stream. */
export interface ChatChunk {
  id?: string;
  model?: string;
  choices: {
    index: number;
    delta: { role?: string; content?: string | null };
    finish_reason: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

/** Streams chat chunks from `path`; leaving the loop or aborting cancels the request. */
async function* streamChat(
  http: Http,
  route: "POST /v1/ai/chat/stream" | "POST /v1/ai/session/chat/stream",
  body: unknown,
  signal: AbortSignal | undefined,
  options: CallOptions = {},
): AsyncGenerator<ChatChunk> {
  const controller = new AbortController();
  const abort = () => controller.abort(signal?.reason);
  if (signal?.aborted) abort();
  signal?.addEventListener("abort", abort, { once: true });
  try {
    const res = await http.send("POST", pathOf(route), body, { ...options, signal: controller.signal });
    if (!res.ok || !res.body) throw await errorFromResponse(res);
    for await (const frame of readSse(res.body)) {
      if (frame.data === "[DONE]") return;
      const chunk = JSON.parse(frame.data);
      if (chunk?.error) {
        throw new PlatformError({ status: 502, type: "unavailable", code: "ERROR", ...chunk.error });
      }
      yield chunk as ChatChunk;
    }
  } catch (err) {
    throw networkError(err);
  } finally {
    signal?.removeEventListener("abort", abort);
    controller.abort();
  }
}

/**
 * AiClient reaches the AI gateway: chat (whole or streamed), embeddings, RAG and its namespaces, semantic
 * search, NL-to-SQL, and `session()`, a budgeted ticket a browser can use without a user.
 */
export class AiClient {
  constructor(private readonly http: Http, private readonly projectRef: () => Promise<string>) {}

  /** One chat completion. */
  chat(messages: ChatMessage[], options: ChatOptions = {}): Promise<ChatResult> {
    return this.http.call("POST /v1/ai/chat", { body: { messages, ...options } });
  }

  /** A chat completion as an async iterator of chunks; abort `signal` (or break) to stop the upstream. */
  chatStream(messages: ChatMessage[], options: ChatStreamOptions = {}): AsyncGenerator<ChatChunk> {
    const { signal, ...rest } = options;
    return streamChat(this.http, "POST /v1/ai/chat/stream", { messages, ...rest }, signal);
  }

  /** Embeddings of one input or several. */
  embed(
    input: string | string[],
    options: { model?: string; provider?: string } = {},
  ): Promise<Schemas["AiEmbeddingsResult"]> {
    return this.http.call("POST /v1/ai/embeddings", { body: { input, ...options } });
  }

  /** Answers `query` from a namespace's documents, with citations. */
  rag(query: Routes["POST /v1/ai/rag"]["body"]): Promise<Routes["POST /v1/ai/rag"]["data"]> {
    return this.http.call("POST /v1/ai/rag", { body: query });
  }

  /** Chunks, embeds and stores a document in `namespace`. */
  ragIngest(
    document: { id?: string; text: string; metadata?: Record<string, unknown> },
    namespace: string,
    options: Omit<Routes["POST /v1/ai/rag/ingest"]["body"], "document" | "namespace"> = {},
  ): Promise<Routes["POST /v1/ai/rag/ingest"]["data"]> {
    return this.http.call("POST /v1/ai/rag/ingest", { body: { namespace, document, ...options } });
  }

  /** Every RAG namespace with its counts and embedding model. */
  listNamespaces(): Promise<Schemas["AiNamespace"][]> {
    return this.http.call("GET /v1/ai/namespaces");
  }

  /** Deletes a namespace and its corpus. */
  deleteNamespace(namespace: string): Promise<Routes["DELETE /v1/ai/namespaces/{ns}"]["data"]> {
    return this.http.call("DELETE /v1/ai/namespaces/{ns}", { params: { ns: namespace } });
  }

  /** Re-embeds a namespace with the current (or given) embedding model. */
  reindexNamespace(namespace: string, options: { model?: string } = {}): Promise<Schemas["AiNamespace"]> {
    return this.http.call("POST /v1/ai/namespaces/{ns}/reindex", {
      params: { ns: namespace },
      body: options,
    });
  }

  /** The chunks of `namespace` closest to `query`, best first. */
  semanticSearch(
    query: string,
    namespace: string,
    options: { top_k?: number; threshold?: number } = {},
  ): Promise<Schemas["AiSearchResult"][]> {
    return this.http.call("POST /v1/ai/search", { body: { query, namespace, ...options } });
  }

  /** Turns a question into one read-only SELECT, and runs it under the caller's RLS with `execute: true`. */
  nl2sql(
    question: string,
    options: Omit<Schemas["AiNl2SqlRequest"], "question"> = {},
  ): Promise<Schemas["AiNl2SqlResult"]> {
    return this.http.call("POST /v1/ai/nl2sql", { body: { question, ...options } });
  }

  /** Mints a session ticket (renewed by the session when it expires). */
  async session(options: Schemas["AiSessionRequest"] = {}): Promise<AiSession> {
    const ref = await this.projectRef();
    const mint = () =>
      this.http.call("POST /v1/ai/{project_id}/session", { params: { project_id: ref }, body: options });
    return new AiSession(this.http, mint, await mint());
  }
}

/**
 * AiSession calls the AI gateway with a ticket alone (`Authorization: Bearer ait_…`, no key): chat,
 * chatStream and embed, each debited from the ticket's budget. An expired ticket is renewed once and the call
 * repeated; a spent budget is PlatformError 403 QUOTA_EXCEEDED.
 */
export class AiSession {
  #ticket: Schemas["AiSession"];
  /** The tokens left in the budget, as of the last answer. */
  budgetRemaining: number;

  constructor(
    private readonly http: Http,
    private readonly mint: () => Promise<Schemas["AiSession"]>,
    ticket: Schemas["AiSession"],
  ) {
    this.#ticket = ticket;
    this.budgetRemaining = ticket.budget_remaining;
  }

  /** The current ticket. */
  get ticket(): string {
    return this.#ticket.ticket;
  }

  /** When the current ticket expires (ISO 8601). */
  get expiresAt(): string {
    return this.#ticket.expires_at;
  }

  async #options(): Promise<CallOptions> {
    if (Date.parse(this.#ticket.expires_at) - 5000 <= Date.now()) await this.#renew();
    return { token: this.#ticket.ticket, noApiKey: true };
  }

  async #renew(): Promise<void> {
    this.#ticket = await this.mint();
    this.budgetRemaining = this.#ticket.budget_remaining;
  }

  async #call<R extends "POST /v1/ai/session/chat" | "POST /v1/ai/session/embed">(
    route: R,
    body: Routes[R]["body"],
  ): Promise<Routes[R]["data"]> {
    let result: Routes[R]["data"];
    try {
      result = await this.http.call(route, { body } as never, await this.#options());
    } catch (err) {
      if (!(err instanceof PlatformError) || err.code !== "INVALID_TOKEN") throw err;
      await this.#renew();
      result = await this.http.call(route, { body } as never, await this.#options());
    }
    this.budgetRemaining = (result as { budget_remaining: number }).budget_remaining;
    return result;
  }

  /** One chat completion, debited from the budget. */
  chat(
    messages: ChatMessage[],
    options: ChatOptions = {},
  ): Promise<Routes["POST /v1/ai/session/chat"]["data"]> {
    return this.#call("POST /v1/ai/session/chat", { messages, ...options });
  }

  /** A streamed chat completion (debited when the stream ends). */
  async *chatStream(messages: ChatMessage[], options: ChatStreamOptions = {}): AsyncGenerator<ChatChunk> {
    const { signal, ...rest } = options;
    yield* streamChat(
      this.http,
      "POST /v1/ai/session/chat/stream",
      { messages, ...rest },
      signal,
      await this.#options(),
    );
  }

  /** The embedding of one input, with the budget left. */
  embed(request: { input: string }): Promise<Routes["POST /v1/ai/session/embed"]["data"]> {
    return this.#call("POST /v1/ai/session/embed", request);
  }

  /** Revokes the current ticket: it stops working at once. A later call mints a new one. */
  async revoke(): Promise<void> {
    await this.http.call("DELETE /v1/ai/session", {}, { token: this.#ticket.ticket, noApiKey: true });
    this.#ticket = { ...this.#ticket, expires_at: new Date(0).toISOString() };
  }
}
