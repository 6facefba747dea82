import type { Databases } from "../../db/databases.ts";
import { errors } from "../../lib/errors.ts";
import { chunkText, DEFAULT_CHUNKING } from "./chunker.ts";
import type { ChunkHit, Corpus, Namespace, NamespaceSummary } from "./corpus.ts";
import type { Embedder } from "./embedder.ts";
import type { Providers } from "./providers.ts";
import type { UsageLog } from "./usage_log.ts";

/** An ingestion request (docs/ai.md), with optional chunking and model for a new namespace. */
export interface IngestRequest {
  namespace: string;
  document: { id?: string; text: string; metadata?: Record<string, unknown> };
  /** The embedding model of a new namespace (default: the configured one); an existing one keeps its own. */
  model?: string;
  chunk_size?: number;
  chunk_overlap?: number;
}

/** A RAG question. */
export interface RagRequest {
  namespace: string;
  query: string;
  top_k?: number;
  threshold?: number;
  model?: string;
  provider?: string;
}

/** A cited chunk. */
export interface Citation {
  document_id: string;
  chunk_id: string;
  text: string;
  score: number;
}

/** The model named in a RAG answer made without a chat provider: the best passages themselves. */
export const EXTRACTIVE_MODEL = "local-extractive";

const MAX_CHUNKS_PER_DOCUMENT = 5000;

/**
 * RagService ingests documents into namespaces, searches them and answers questions with citations.
 * A namespace's chunks are always embedded with the model it records; reindex switches it.
 */
export class RagService {
  constructor(
    private readonly deps: {
      dbs: Databases;
      corpus: Corpus;
      embedder: Embedder;
      providers: Providers;
      usage: UsageLog;
    },
  ) {}

  private async namespace(ref: string, name: string): Promise<Namespace> {
    const db = await this.deps.dbs.project(ref);
    const ns = await this.deps.corpus.find(db, name);
    if (!ns) throw errors.notFound(`Namespace "${name}" does not exist`);
    return ns;
  }

  private async embed(ref: string, texts: string[], model: string) {
    const embedded = await this.deps.embedder.embed(texts, { model });
    this.deps.usage.record(ref, {
      provider: embedded.provider,
      model: embedded.model,
      kind: "embeddings",
      usage: embedded.usage,
    });
    return embedded;
  }

  /** Chunks, embeds and stores a document (replacing one with the same id). */
  async ingest(
    ref: string,
    req: IngestRequest,
  ): Promise<{ document_id: string; chunks: number; model: string }> {
    const size = req.chunk_size ?? DEFAULT_CHUNKING.size;
    const overlap = req.chunk_overlap ?? Math.min(DEFAULT_CHUNKING.overlap, Math.floor(size / 4));
    if (overlap >= size) throw errors.validation("chunk_overlap must be smaller than chunk_size");
    const texts = chunkText(req.document.text, { size, overlap });
    if (texts.length === 0) throw errors.validation("document.text is empty");
    if (texts.length > MAX_CHUNKS_PER_DOCUMENT) {
      throw errors.validation(`Document gives ${texts.length} chunks, more than ${MAX_CHUNKS_PER_DOCUMENT}`);
    }
    const db = await this.deps.dbs.project(ref);
    const existing = await this.deps.corpus.find(db, req.namespace);
    if (existing && req.model !== undefined && req.model !== existing.embedding_model) {
      throw errors.conflict(
        `Namespace "${req.namespace}" is embedded with "${existing.embedding_model}": reindex it to change model`,
      );
    }
    const model = existing?.embedding_model ?? req.model ?? this.deps.embedder.defaultModel();
    const embedded = await this.embed(ref, texts, model);
    const dimensions = embedded.vectors[0]!.length;
    const ns = existing ?? await this.deps.corpus.ensure(db, req.namespace, embedded.model, dimensions);
    if (ns.dimensions !== dimensions || ns.embedding_model !== embedded.model) {
      throw errors.conflict(
        `Namespace "${req.namespace}" holds ${ns.dimensions}-dimension vectors of "${ns.embedding_model}": ` +
          "reindex it first",
      );
    }
    const documentId = req.document.id ?? crypto.randomUUID();
    await this.deps.corpus.putDocument(db, ns, {
      id: documentId,
      metadata: req.document.metadata ?? {},
      chunks: texts.map((text, i) => ({ text, embedding: embedded.vectors[i]! })),
    });
    return { document_id: documentId, chunks: texts.length, model: ns.embedding_model };
  }

  /** The chunks of a namespace closest to a query. */
  async search(
    ref: string,
    req: { query: string; namespace: string; top_k?: number; threshold?: number },
  ): Promise<ChunkHit[]> {
    const ns = await this.namespace(ref, req.namespace);
    const embedded = await this.embed(ref, [req.query], ns.embedding_model);
    const vector = embedded.vectors[0]!;
    if (vector.length !== ns.dimensions) {
      throw errors.conflict(`Namespace "${ns.name}" needs a reindex: its model now gives other dimensions`);
    }
    const db = await this.deps.dbs.project(ref);
    return await this.deps.corpus.search(db, ns, vector, req.top_k ?? 5, req.threshold ?? 0);
  }

  /**
   * Retrieves the best chunks and answers from them with citations. With a chat provider the model writes
   * the answer from the numbered passages; without one the answer is the best passage itself (model
   * `local-extractive`), so RAG works offline.
   */
  async answer(ref: string, req: RagRequest, signal?: AbortSignal): Promise<{
    answer: string;
    citations: Citation[];
    model: string;
  }> {
    const hits = await this.search(ref, {
      query: req.query,
      namespace: req.namespace,
      top_k: req.top_k ?? 4,
      threshold: req.threshold,
    });
    const citations = hits.map(({ document_id, chunk_id, text, score }) => ({
      document_id,
      chunk_id,
      text,
      score,
    }));
    if (this.deps.providers.names.length === 0 && req.provider === undefined) {
      return {
        answer: citations[0]?.text ?? `No passage of namespace "${req.namespace}" matches the question`,
        citations,
        model: EXTRACTIVE_MODEL,
      };
    }
    const provider = this.deps.providers.get(req.provider);
    const model = req.model ?? provider.config.chatModel;
    const context = citations.map((c, i) => `[${i + 1}] ${c.text}`).join("\n\n");
    const answer = await provider.chat({
      model,
      temperature: 0,
      messages: [
        {
          role: "system",
          content:
            "Answer the question using only the numbered context passages. Cite the passages you use " +
            'as [n]. If the passages do not contain the answer, say "I do not know".',
        },
        { role: "user", content: `Context:\n${context || "(no passage matched)"}\n\nQuestion: ${req.query}` },
      ],
    }, signal);
    this.deps.usage.record(ref, {
      provider: provider.name,
      model: answer.model,
      kind: "rag",
      usage: answer.usage,
    });
    // Cite the passages the answer refers to; when it names none, every passage it was given.
    const used = new Set([...answer.content.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]) - 1));
    const cited = used.size > 0 ? citations.filter((_, i) => used.has(i)) : citations;
    return { answer: answer.content, citations: cited, model: answer.model };
  }

  /** Every namespace with its counts. */
  async namespaces(ref: string): Promise<NamespaceSummary[]> {
    return await this.deps.corpus.list(await this.deps.dbs.project(ref));
  }

  /** Deletes a namespace and its whole corpus; 404 when it does not exist. */
  async deleteNamespace(
    ref: string,
    name: string,
  ): Promise<{ name: string; documents: number; chunks: number }> {
    const dropped = await this.deps.corpus.drop(await this.deps.dbs.project(ref), name);
    if (!dropped) throw errors.notFound(`Namespace "${name}" does not exist`);
    return { name, ...dropped };
  }

  /** Re-embeds every chunk of a namespace with `model` (default: the configured one) and records it. */
  async reindex(ref: string, name: string, model?: string): Promise<NamespaceSummary> {
    const db = await this.deps.dbs.project(ref);
    const ns = await this.namespace(ref, name);
    const target = model ?? this.deps.embedder.defaultModel();
    const chunks = await this.deps.corpus.chunkTexts(db, ns);
    let dimensions = ns.dimensions;
    const embeddings: { id: string; embedding: Float32Array }[] = [];
    let resolvedModel = target;
    for (let i = 0; i < chunks.length; i += 256) {
      const batch = chunks.slice(i, i + 256);
      const embedded = await this.embed(ref, batch.map((c) => c.text), target);
      resolvedModel = embedded.model;
      batch.forEach((c, j) => embeddings.push({ id: c.id, embedding: embedded.vectors[j]! }));
    }
    if (embeddings.length > 0) dimensions = embeddings[0]!.embedding.length;
    else {dimensions =
        (await this.deps.embedder.embed(["dimension probe"], { model: target })).vectors[0]!.length;}
    await this.deps.corpus.replaceEmbeddings(db, ns, resolvedModel, dimensions, embeddings);
    const summary = (await this.deps.corpus.list(db)).find((n) => n.name === name);
    if (!summary) throw errors.notFound(`Namespace "${name}" does not exist`);
    return summary;
  }
}
