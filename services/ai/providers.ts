import type OpenAI from "openai";
import type { APIError } from "openai";
import { z } from "zod";
import type { Config } from "../config.ts";
import { AppError, errors } from "../../lib/errors.ts";

/** One OpenAI-compatible model server (OpenAI, Ollama, vLLM…). */
export interface ProviderConfig {
  /** The name a request gives as `provider`; `default` for `AI_BASE_URL`. */
  name: string;
  baseUrl: string;
  apiKey?: string;
  /** The chat model used when a request names none. */
  chatModel: string;
  /** The embedding model; unset: embeddings come from the local lexical embedder. */
  embeddingModel?: string;
}

const ProviderEntry = z.strictObject({
  base_url: z.string().url(),
  api_key: z.string().optional(),
  chat_model: z.string().min(1).optional(),
  embedding_model: z.string().min(1).optional(),
});
const ProviderMap = z.record(z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/), ProviderEntry);

/**
 * The providers of the configuration: `default` from `AI_BASE_URL`/`AI_API_KEY`/`AI_CHAT_MODEL`/
 * `AI_EMBEDDING_MODEL`, then the named ones of `AI_PROVIDERS` (a JSON object
 * `{"name": {"base_url", "api_key"?, "chat_model"?, "embedding_model"?}}`). The first one is the default.
 */
export function providerConfigs(config: Config): ProviderConfig[] {
  const out: ProviderConfig[] = [];
  if (config.AI_BASE_URL) {
    out.push({
      name: "default",
      baseUrl: config.AI_BASE_URL,
      apiKey: config.AI_API_KEY,
      chatModel: config.AI_CHAT_MODEL,
      embeddingModel: config.AI_EMBEDDING_MODEL,
    });
  }
  if (config.AI_PROVIDERS) {
    let parsed: z.infer<typeof ProviderMap>;
    try {
      parsed = ProviderMap.parse(JSON.parse(config.AI_PROVIDERS));
    } catch {
      throw new Error(
        'Invalid configuration: AI_PROVIDERS must be a JSON object {"name": {"base_url", "api_key"?, ' +
          '"chat_model"?, "embedding_model"?}} with lowercase names',
      );
    }
    for (const [name, p] of Object.entries(parsed)) {
      if (out.some((o) => o.name === name)) {
        throw new Error(`Invalid configuration: provider "${name}" twice`);
      }
      out.push({
        name,
        baseUrl: p.base_url,
        apiKey: p.api_key,
        chatModel: p.chat_model ?? config.AI_CHAT_MODEL,
        embeddingModel: p.embedding_model,
      });
    }
  }
  return out;
}

/** A chat message as the gateway passes it on. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** Token usage of one call, in OpenAI's terms. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What a chat call sends. */
export interface ChatCall {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  max_tokens?: number;
}

/** What a chat call answers. */
export interface ChatAnswer {
  content: string;
  model: string;
  usage: Usage;
  /** Why the model stopped: `stop` (a complete answer), `length` (cut at `max_tokens`)…; null if unsaid. */
  finishReason: string | null;
}

type Sdk = typeof import("openai");
let sdk: Sdk | undefined;

/** The openai package, loaded by the first provider call: a process that never makes one saves its memory. */
async function loadSdk(): Promise<Sdk> {
  return sdk ??= await import("openai");
}

/** A provider's client with the limits of the configuration. */
export class Provider {
  private client?: Promise<OpenAI>;

  constructor(
    readonly config: ProviderConfig,
    private readonly limits: { timeoutMs: number; maxRetries: number },
  ) {}

  private api(): Promise<OpenAI> {
    return this.client ??= loadSdk().then(({ default: OpenAI }) =>
      new OpenAI({
        baseURL: this.config.baseUrl,
        apiKey: this.config.apiKey ?? "none",
        timeout: this.limits.timeoutMs,
        // The package retries 408, 409, 429 and 5xx with backoff and Retry-After.
        maxRetries: this.limits.maxRetries,
      })
    );
  }

  /** The provider's name. */
  get name(): string {
    return this.config.name;
  }

  /** One chat completion. */
  async chat(call: ChatCall, signal?: AbortSignal): Promise<ChatAnswer> {
    try {
      const res = await (await this.api()).chat.completions.create({ ...call, stream: false }, { signal });
      const choice = res.choices[0];
      return {
        content: choice?.message?.content ?? "",
        model: res.model || call.model,
        usage: usageOf(res.usage),
        finishReason: choice?.finish_reason ?? null,
      };
    } catch (err) {
      throw providerError(this.name, err);
    }
  }

  /** A streamed chat completion: OpenAI chunks as the provider sends them. */
  async stream(call: ChatCall, signal: AbortSignal): Promise<AsyncIterable<OpenAI.ChatCompletionChunk>> {
    try {
      return await (await this.api()).chat.completions.create(
        { ...call, stream: true, stream_options: { include_usage: true } },
        { signal },
      );
    } catch (err) {
      throw providerError(this.name, err);
    }
  }

  /** Embeddings of `inputs` with `model`. */
  async embed(
    inputs: string[],
    model: string,
    signal?: AbortSignal,
  ): Promise<{ vectors: number[][]; usage: Usage }> {
    try {
      const res = await (await this.api()).embeddings.create({
        model,
        input: inputs,
        encoding_format: "float",
      }, {
        signal,
      });
      const vectors = [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
      if (vectors.length !== inputs.length) {
        throw errors.unavailable(
          `AI provider "${this.name}" answered ${vectors.length} embeddings for ${inputs.length} inputs`,
        );
      }
      return { vectors, usage: usageOf(res.usage) };
    } catch (err) {
      throw providerError(this.name, err);
    }
  }
}

/** Usage as OpenAI reports it, with zeros where a server omits a field. */
export function usageOf(
  u: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null | undefined,
): Usage {
  const prompt = u?.prompt_tokens ?? 0;
  const completion = u?.completion_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: u?.total_tokens ?? prompt + completion,
  };
}

/**
 * Maps a provider failure to the catalogue: a timeout is 504, rate limiting 429 (with Retry-After), a request
 * the provider rejects 400 with its short reason, anything else (5xx after retries, refused connection,
 * rejected credentials) 503. Messages name the provider and status, never the key.
 */
export function providerError(name: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  // The package's errors exist only once it is loaded, and only a loaded package throws them.
  if (!sdk) return errors.unavailable(`AI provider "${name}" is unreachable`, err);
  const { APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (err instanceof APIUserAbortError) {
    return errors.requestAborted();
  }
  if (err instanceof APIConnectionTimeoutError) {
    return errors.timeout(`AI provider "${name}" did not answer in time`, err);
  }
  if (err instanceof APIError && typeof err.status === "number") {
    const status = err.status;
    if (status === 429) {
      const retry = err.headers?.get("retry-after") ?? "1";
      return errors.rateLimited(
        `AI provider "${name}" is rate limiting: retry later`,
        /^\d+$/.test(retry) ? retry : 1,
        err,
      );
    }
    if (status === 401 || status === 403) {
      return errors.unavailable(`AI provider "${name}" rejected the gateway's credentials (${status})`, err);
    }
    if (status >= 400 && status < 500) {
      const reason = providerReason(err).slice(0, 200);
      return errors.validation(
        `AI provider "${name}" rejected the request (${status})${reason ? `: ${reason}` : ""}`,
      );
    }
    return errors.unavailable(`AI provider "${name}" failed (${status})`, err);
  }
  return errors.unavailable(`AI provider "${name}" is unreachable`, err);
}

function providerReason(err: APIError): string {
  const body = err.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const message = body?.message ?? body?.error?.message;
  return typeof message === "string" ? message.replace(/[\r\n]+/g, " ") : "";
}

/** The message of the 503 when no chat provider is configured: it says how to configure one. */
export const NO_PROVIDER_MESSAGE =
  "No AI provider is configured: set AI_BASE_URL (an OpenAI-compatible endpoint such as " +
  "https://api.openai.com/v1 or http://localhost:11434/v1 for Ollama), AI_API_KEY and AI_CHAT_MODEL, " +
  "or AI_PROVIDERS, then restart";

/** Providers holds the configured providers and picks one per request. */
export class Providers {
  private readonly byName = new Map<string, Provider>();

  constructor(configs: ProviderConfig[], limits: { timeoutMs: number; maxRetries: number }) {
    for (const c of configs) this.byName.set(c.name, new Provider(c, limits));
  }

  /** Names of the configured providers, the default first. */
  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The provider a request names, or the default; 503 when none is configured, 400 for an unknown name. */
  get(name?: string): Provider {
    if (this.byName.size === 0) throw errors.unavailable(NO_PROVIDER_MESSAGE);
    if (name === undefined) return this.byName.values().next().value!;
    const p = this.byName.get(name);
    if (!p) {
      throw errors.validation(
        `Unknown AI provider "${name}": configured providers are ${
          this.names.map((n) => `"${n}"`).join(", ")
        }`,
      );
    }
    return p;
  }

  /** The provider that embeds with `model`, if one lists it as its embedding model. */
  forEmbeddingModel(model: string): Provider | undefined {
    for (const p of this.byName.values()) if (p.config.embeddingModel === model) return p;
    return undefined;
  }

  /** The default embedding provider: the first that has an embedding model. */
  embeddingDefault(): Provider | undefined {
    for (const p of this.byName.values()) if (p.config.embeddingModel) return p;
    return undefined;
  }
}
