import type { Db, Queryable } from "../../db/driver.ts";
import { corpusStore, safeInt } from "./store.ts";
import { VectorIndexes } from "./vector_index.ts";
import { toPgArray, toPgVector } from "./vectors.ts";

/**
 * How vectors are searched: `auto` uses pgvector when the project database has it and the platform's own HNSW
 * index otherwise; `hnsw` always the platform's index; `array` always the exact scan.
 */
export type VectorStoreMode = "auto" | "pgvector" | "hnsw" | "array";

/** What serves the searches of a database, as the banner and `/v1/ready` say it. */
export type VectorSearch = "pgvector" | "platform-hnsw" | "exact";

/** A namespace row. */
export interface Namespace {
  id: string;
  name: string;
  embedding_model: string;
  dimensions: number;
  created_at: string;
  /** Moves on every write of the namespace's chunks. */
  chunks_version?: string;
  /** Moves on every reindex. */
  vectors_version?: string;
}

/** A namespace with its counts, as listed. */
export interface NamespaceSummary {
  name: string;
  documents: number;
  chunks: number;
  embedding_model: string;
  created_at: string;
}

/** A chunk ready to store. */
export interface ChunkInput {
  text: string;
  embedding: Float32Array;
}

/** A search hit. */
export interface ChunkHit {
  document_id: string;
  chunk_id: string;
  text: string;
  score: number;
  metadata: Record<string, unknown>;
}

/**
 * Corpus stores RAG namespaces, documents and chunk embeddings in the project database.
 * Embeddings are unit vectors in a `real[]` column. With pgvector, each namespace has a partial HNSW index on
 * `(embedding::vector(dimensions))` with cosine distance, and searches use it; without pgvector (or with
 * `AI_VECTOR_STORE=hnsw`) the platform keeps an HNSW index per namespace itself (vector_index.ts); with
 * `AI_VECTOR_STORE=array` a search is an exact scan computing the dot product in SQL.
 */
export class Corpus {
  private readonly pgvector = new WeakMap<Db, Promise<boolean>>();
  private readonly indexes = new VectorIndexes();

  constructor(private readonly mode: VectorStoreMode) {}

  /** True when searches of this database use pgvector. */
  usesPgvector(db: Db): Promise<boolean> {
    let known = this.pgvector.get(db);
    if (!known) {
      known = this.mode === "array" || this.mode === "hnsw"
        ? Promise.resolve(false)
        : corpusStore.hasPgvector(db).then((present) => {
          if (!present && this.mode === "pgvector") {
            throw new Error("AI_VECTOR_STORE=pgvector but the project database has no pgvector extension");
          }
          return present === true;
        });
      this.pgvector.set(db, known);
      known.catch(() => this.pgvector.delete(db));
    }
    return known;
  }

  /** What serves the searches of this database. */
  async vectorSearch(db: Db): Promise<VectorSearch> {
    if (await this.usesPgvector(db)) return "pgvector";
    return this.mode === "array" ? "exact" : "platform-hnsw";
  }

  /** A namespace by name. */
  async find(db: Queryable, name: string): Promise<Namespace | null> {
    return await corpusStore.findNamespace(db, name);
  }

  /** The namespace named `name`, created with `model` and `dimensions` (and its index) when new. */
  async ensure(db: Db, name: string, model: string, dimensions: number): Promise<Namespace> {
    const pgvector = await this.usesPgvector(db);
    return await db.transaction(async (tx) => {
      const created = await corpusStore.insertNamespace(tx, name, model, dimensions);
      if (created) {
        if (pgvector) await this.createIndex(tx, created.id, dimensions);
        return created;
      }
      return (await this.find(tx, name))!;
    });
  }

  private async createIndex(tx: Queryable, namespaceId: string, dimensions: number): Promise<void> {
    safeInt(namespaceId);
    const dims = safeInt(dimensions);
    // pgvector's HNSW index holds at most 2000 dimensions; above that the exact scan serves the namespace.
    // The predicate on the length keeps vectors of another size out of the index, including the old row
    // versions that a reindex leaves behind and that an index build still visits.
    if (dims > 2000) return;
    await corpusStore.createIndex(tx, namespaceId, dims);
  }

  /** Replaces a document (its metadata and every chunk) in one transaction. */
  async putDocument(
    db: Db,
    ns: Namespace,
    doc: { id: string; metadata: Record<string, unknown>; chunks: ChunkInput[] },
  ): Promise<void> {
    await db.transaction(async (tx) => {
      await corpusStore.deleteDocument(tx, ns.id, doc.id);
      await corpusStore.insertDocument(tx, ns.id, doc.id, doc.metadata);
      await corpusStore.insertChunks(tx, ns.id, doc.id, doc.chunks);
      await corpusStore.touchNamespace(tx, ns.id);
    });
  }

  /** The `topK` chunks closest to `vector` (cosine), with `score >= threshold`, best first. */
  async search(
    db: Db,
    ns: Namespace,
    vector: Float32Array,
    topK: number,
    threshold: number,
  ): Promise<ChunkHit[]> {
    safeInt(ns.id);
    const dims = safeInt(ns.dimensions);
    if (await this.usesPgvector(db) && dims <= 2000) {
      return await db.transaction(async (tx) =>
        mapHits(await corpusStore.searchIndexed(tx, ns, toPgVector(vector), topK, threshold))
      );
    }
    if (this.mode !== "array") return mapHits(await this.indexes.search(db, ns, vector, topK, threshold));
    return mapHits(await corpusStore.searchScan(db, ns, toPgArray(vector), topK, threshold));
  }

  /** Every namespace with its counts, by name. */
  async list(db: Queryable): Promise<NamespaceSummary[]> {
    const rows = await corpusStore.listNamespaces(db);
    return rows.map((r) => ({
      name: String(r.name),
      documents: Number(r.documents),
      chunks: Number(r.chunks),
      embedding_model: String(r.embedding_model),
      created_at: new Date(r.created_at as string).toISOString(),
    }));
  }

  /** Deletes a namespace with its documents, chunks and index; false when it does not exist. */
  async drop(db: Db, name: string): Promise<{ documents: number; chunks: number } | null> {
    const dropped = await db.transaction(async (tx) => {
      const ns = await this.find(tx, name);
      if (!ns) return null;
      const counts = await corpusStore.countNamespace(tx, ns.id);
      await corpusStore.dropIndex(tx, ns.id);
      await corpusStore.deleteNamespace(tx, ns.id);
      return { ns, counts };
    });
    if (!dropped) return null;
    this.indexes.forget(db, dropped.ns.id);
    return dropped.counts;
  }

  /** The chunks of a namespace (id and text), for reindexing. */
  async chunkTexts(db: Queryable, ns: Namespace): Promise<{ id: string; text: string }[]> {
    return await corpusStore.chunkTexts(db, ns.id);
  }

  /**
   * Swaps a namespace to new embeddings in one transaction: every chunk's vector, the recorded model and
   * dimensions, and the index.
   */
  async replaceEmbeddings(
    db: Db,
    ns: Namespace,
    model: string,
    dimensions: number,
    embeddings: { id: string; embedding: Float32Array }[],
  ): Promise<void> {
    const pgvector = await this.usesPgvector(db);
    await db.transaction(async (tx) => {
      await corpusStore.updateEmbeddings(tx, ns.id, embeddings);
      await corpusStore.setModel(tx, ns.id, model, dimensions);
      await corpusStore.dropIndex(tx, ns.id);
      if (pgvector) await this.createIndex(tx, ns.id, dimensions);
    });
  }
}

function mapHits(rows: Record<string, unknown>[]): ChunkHit[] {
  return rows.map((r) => ({
    document_id: String(r.document_id),
    chunk_id: String(r.chunk_id),
    text: String(r.text),
    score: Math.round(Number(r.score) * 10_000) / 10_000,
    metadata: (typeof r.metadata === "string" ? JSON.parse(r.metadata) : r.metadata ?? {}) as Record<
      string,
      unknown
    >,
  }));
}
