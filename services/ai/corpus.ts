import type { Db, Queryable } from "../../db/driver.ts";
import { toPgArray, toPgVector } from "./vectors.ts";

/** How vectors are searched: `auto` uses pgvector when the project database has it. */
export type VectorStoreMode = "auto" | "pgvector" | "array";

/** A namespace row. */
export interface Namespace {
  id: string;
  name: string;
  embedding_model: string;
  dimensions: number;
  created_at: string;
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

const NS_COLUMNS = "id::text as id, name, embedding_model, dimensions, created_at";

function safeInt(value: string | number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error("Expected a non-negative integer");
  return n;
}

/**
 * Corpus stores RAG namespaces, documents and chunk embeddings in the project database.
 * Embeddings are unit vectors in a `real[]` column. With pgvector, each namespace has a partial HNSW index on
 * `(embedding::vector(dimensions))` with cosine distance, and searches use it; without pgvector (or with
 * `AI_VECTOR_STORE=array`) a search is an exact scan computing the dot product in SQL.
 */
export class Corpus {
  private readonly pgvector = new WeakMap<Db, Promise<boolean>>();

  constructor(private readonly mode: VectorStoreMode) {}

  /** True when searches of this database use pgvector. */
  usesPgvector(db: Db): Promise<boolean> {
    let known = this.pgvector.get(db);
    if (!known) {
      known = this.mode === "array" ? Promise.resolve(false) : db.query<{ present: boolean }>(
        "select exists (select 1 from pg_extension where extname = 'vector') as present",
      ).then(([row]) => {
        if (!row?.present && this.mode === "pgvector") {
          throw new Error("AI_VECTOR_STORE=pgvector but the project database has no pgvector extension");
        }
        return row?.present === true;
      });
      this.pgvector.set(db, known);
      known.catch(() => this.pgvector.delete(db));
    }
    return known;
  }

  /** A namespace by name. */
  async find(db: Queryable, name: string): Promise<Namespace | null> {
    const [row] = await db.query<Namespace>(
      `select ${NS_COLUMNS} from platform.ai_namespaces where name = $1`,
      [
        name,
      ],
    );
    return row ?? null;
  }

  /** The namespace named `name`, created with `model` and `dimensions` (and its index) when new. */
  async ensure(db: Db, name: string, model: string, dimensions: number): Promise<Namespace> {
    const pgvector = await this.usesPgvector(db);
    return await db.transaction(async (tx) => {
      const [created] = await tx.query<Namespace>(
        `insert into platform.ai_namespaces (name, embedding_model, dimensions) values ($1, $2, $3)
         on conflict (name) do nothing returning ${NS_COLUMNS}`,
        [name, model, dimensions],
      );
      if (created) {
        if (pgvector) await this.createIndex(tx, created.id, dimensions);
        return created;
      }
      return (await this.find(tx, name))!;
    });
  }

  private async createIndex(tx: Queryable, namespaceId: string, dimensions: number): Promise<void> {
    const id = safeInt(namespaceId);
    const dims = safeInt(dimensions);
    // pgvector's HNSW index holds at most 2000 dimensions; above that the exact scan serves the namespace.
    // The predicate on the length keeps vectors of another size out of the index, including the old row
    // versions that a reindex leaves behind and that an index build still visits.
    if (dims > 2000) return;
    await tx.exec(
      `create index if not exists ai_chunks_ns_${id} on platform.ai_chunks
         using hnsw ((embedding::vector(${dims})) vector_cosine_ops)
         where namespace_id = ${id} and array_length(embedding, 1) = ${dims}`,
    );
  }

  /** Replaces a document (its metadata and every chunk) in one transaction. */
  async putDocument(
    db: Db,
    ns: Namespace,
    doc: { id: string; metadata: Record<string, unknown>; chunks: ChunkInput[] },
  ): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.query("delete from platform.ai_documents where namespace_id = $1 and id = $2", [
        ns.id,
        doc.id,
      ]);
      await tx.query(
        "insert into platform.ai_documents (namespace_id, id, metadata) values ($1, $2, $3::jsonb)",
        [
          ns.id,
          doc.id,
          JSON.stringify(doc.metadata),
        ],
      );
      await insertChunks(tx, ns.id, doc.id, doc.chunks);
      await tx.query("update platform.ai_namespaces set updated_at = now() where id = $1", [ns.id]);
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
    const id = safeInt(ns.id);
    const dims = safeInt(ns.dimensions);
    const outer = (inner: string) =>
      `select s.document_id, s.chunk_id, s.text, s.score, d.metadata
         from (${inner}) s
         join platform.ai_documents d on d.namespace_id = ${id} and d.id = s.document_id
        where s.score >= $3
        order by s.score desc, s.chunk_id`;
    if (await this.usesPgvector(db) && dims <= 2000) {
      const sql = outer(
        `select c.document_id, c.id::text as chunk_id, c.text,
                1 - (c.embedding::vector(${dims}) <=> $1::vector(${dims})) as score
           from platform.ai_chunks c
          where c.namespace_id = ${id} and array_length(c.embedding, 1) = ${dims}
          order by c.embedding::vector(${dims}) <=> $1::vector(${dims})
          limit $2`,
      );
      return await db.transaction(async (tx) => {
        await tx.query("select set_config('hnsw.ef_search', $1, true)", [String(Math.max(64, topK * 4))]);
        return mapHits(await tx.query(sql, [toPgVector(vector), topK, threshold]));
      });
    }
    const sql = outer(
      `select c.document_id, c.id::text as chunk_id, c.text,
              (select sum(a::float8 * b::float8) from unnest(c.embedding, $1::real[]) as t(a, b)) as score
         from platform.ai_chunks c
        where c.namespace_id = ${id}
        order by score desc nulls last
        limit $2`,
    );
    return mapHits(await db.query(sql, [toPgArray(vector), topK, threshold]));
  }

  /** Every namespace with its counts, by name. */
  async list(db: Queryable): Promise<NamespaceSummary[]> {
    const rows = await db.query<Record<string, unknown>>(
      `select n.name, n.embedding_model, n.created_at,
              (select count(*) from platform.ai_documents d where d.namespace_id = n.id) as documents,
              (select count(*) from platform.ai_chunks c where c.namespace_id = n.id) as chunks
         from platform.ai_namespaces n order by n.name`,
    );
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
    return await db.transaction(async (tx) => {
      const ns = await this.find(tx, name);
      if (!ns) return null;
      const [counts] = await tx.query<{ documents: string; chunks: string }>(
        `select (select count(*) from platform.ai_documents where namespace_id = $1) as documents,
                (select count(*) from platform.ai_chunks where namespace_id = $1) as chunks`,
        [ns.id],
      );
      await tx.exec(`drop index if exists platform.ai_chunks_ns_${safeInt(ns.id)}`);
      await tx.query("delete from platform.ai_chunks where namespace_id = $1", [ns.id]);
      await tx.query("delete from platform.ai_namespaces where id = $1", [ns.id]);
      return { documents: Number(counts!.documents), chunks: Number(counts!.chunks) };
    });
  }

  /** The chunks of a namespace (id and text), for reindexing. */
  async chunkTexts(db: Queryable, ns: Namespace): Promise<{ id: string; text: string }[]> {
    return await db.query(
      "select id::text as id, text from platform.ai_chunks where namespace_id = $1 order by ai_chunks.id",
      [
        ns.id,
      ],
    );
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
      for (let i = 0; i < embeddings.length; i += 500) {
        const batch = embeddings.slice(i, i + 500).map((e) => ({
          id: e.id,
          embedding: Array.from(e.embedding),
        }));
        await tx.query(
          `update platform.ai_chunks c
              set embedding = array(select e::real from jsonb_array_elements_text(x.embedding) with ordinality as t(e, n) order by n)
             from jsonb_to_recordset($1::jsonb) as x(id bigint, embedding jsonb)
            where c.id = x.id and c.namespace_id = $2`,
          [JSON.stringify(batch), ns.id],
        );
      }
      await tx.query(
        "update platform.ai_namespaces set embedding_model = $1, dimensions = $2, updated_at = now() where id = $3",
        [model, dimensions, ns.id],
      );
      await tx.exec(`drop index if exists platform.ai_chunks_ns_${safeInt(ns.id)}`);
      if (pgvector) await this.createIndex(tx, ns.id, dimensions);
    });
  }
}

/** Inserts chunks in batches of 500, each batch one statement. */
export async function insertChunks(
  tx: Queryable,
  namespaceId: string,
  documentId: string,
  chunks: ChunkInput[],
  firstOrdinal = 0,
): Promise<void> {
  for (let i = 0; i < chunks.length; i += 500) {
    const batch = chunks.slice(i, i + 500).map((c, j) => ({
      ordinal: firstOrdinal + i + j,
      text: c.text,
      embedding: Array.from(c.embedding),
    }));
    await tx.query(
      `insert into platform.ai_chunks (namespace_id, document_id, ordinal, text, embedding)
       select $1, $2, x.ordinal, x.text, array(select e::real from jsonb_array_elements_text(x.embedding) with ordinality as t(e, n) order by n)
         from jsonb_to_recordset($3::jsonb) as x(ordinal int, text text, embedding jsonb)`,
      [namespaceId, documentId, JSON.stringify(batch)],
    );
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
