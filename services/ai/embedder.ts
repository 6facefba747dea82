import { errors } from "../../lib/errors.ts";
import { countTokens, embedLocally, LOCAL_EMBEDDING_MODEL } from "./local_embedder.ts";
import type { Provider, Providers, Usage } from "./providers.ts";
import { normalize } from "./vectors.ts";

/** Options of {@linkcode Embedder.embed}. */
export interface EmbedOptions {
  /** The embedding model; default: the configured one, or the local lexical embedder. */
  model?: string;
  /** A configured provider by name. */
  provider?: string;
  signal?: AbortSignal;
}

/** Unit vectors for some texts, with the model that made them. */
export interface Embedded {
  vectors: Float32Array[];
  model: string;
  /** `local` for the built-in embedder. */
  provider: string;
  usage: Usage;
}

/**
 * Embedder turns texts into unit vectors, through the embedding model of a provider when one is configured
 * and through the built-in lexical embedder ({@linkcode LOCAL_EMBEDDING_MODEL}) otherwise, so that RAG,
 * search and the semantic cache work offline.
 */
export class Embedder {
  constructor(private readonly providers: Providers) {}

  /** The model used when a request names none. */
  defaultModel(): string {
    return this.providers.embeddingDefault()?.config.embeddingModel ?? LOCAL_EMBEDDING_MODEL;
  }

  private resolve(options: EmbedOptions): { provider?: Provider; model: string } {
    if (options.provider !== undefined) {
      const provider = this.providers.get(options.provider);
      const model = options.model ?? provider.config.embeddingModel;
      if (model === LOCAL_EMBEDDING_MODEL) return { model };
      if (!model) {
        throw errors.validation(
          `AI provider "${provider.name}" has no embedding model: set its embedding model or send "model"`,
        );
      }
      return { provider, model };
    }
    const model = options.model ?? this.defaultModel();
    if (model === LOCAL_EMBEDDING_MODEL) return { model };
    const provider = this.providers.forEmbeddingModel(model) ?? this.providers.embeddingDefault();
    if (!provider) {
      throw errors.validation(
        `Embedding model "${model}" is not available: no embedding provider is configured ` +
          `(set AI_EMBEDDING_MODEL), and the built-in model is "${LOCAL_EMBEDDING_MODEL}"`,
      );
    }
    return { provider, model };
  }

  /**
   * The most tokens embedding `texts` can be counted: exact for the built-in embedder; for a provider, one per
   * UTF-8 byte plus two special tokens per input (no tokenizer spends more).
   */
  tokenBound(texts: string[], options: EmbedOptions = {}): number {
    if (!this.resolve(options).provider) return texts.reduce((n, t) => n + countTokens(t), 0);
    const encoder = new TextEncoder();
    return texts.reduce((n, t) => n + encoder.encode(t).length + 2, 0);
  }

  /** Embeds `texts` (in batches of 256 for a provider). */
  async embed(texts: string[], options: EmbedOptions = {}): Promise<Embedded> {
    const { provider, model } = this.resolve(options);
    if (!provider) {
      const tokens = texts.reduce((n, t) => n + countTokens(t), 0);
      return {
        vectors: texts.map(embedLocally),
        model,
        provider: "local",
        usage: { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens },
      };
    }
    const vectors: Float32Array[] = [];
    const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    for (let i = 0; i < texts.length; i += 256) {
      const slice = texts.slice(i, i + 256);
      const batch = await provider.embed(slice, model, options.signal);
      for (const v of batch.vectors) vectors.push(normalize(v));
      // A server that reports no usage is counted by estimate, so that a session ticket never embeds for free.
      const tokens = batch.usage.total_tokens > 0
        ? batch.usage.total_tokens
        : slice.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
      usage.prompt_tokens += batch.usage.prompt_tokens > 0 ? batch.usage.prompt_tokens : tokens;
      usage.total_tokens += tokens;
    }
    return { vectors, model, provider: provider.name, usage };
  }
}
