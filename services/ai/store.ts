import { type Queryable, quoteIdent } from "../../db/driver.ts";
import type { ChunkInput, Namespace } from "./corpus.ts";
import type { UsageEntry } from "./usage_log.ts";

// The AI area's SQL, in the project database: RAG namespaces, documents and chunks (corpusStore), token usage
// (usageStore) and the catalog and session of NL-to-SQL (nl2sqlStore).

const NS_COLUMNS =
  "id::text as id, name, embedding_model, dimensions, created_at, chunks_version::text, vectors_version::text";

/** A namespace id or dimension count checked before it is written into SQL text. */
export function safeInt(value: string | number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error("Expected a non-negative integer");
  return n;
}

/** The SQL of RAG namespaces, documents and chunk embeddings. */
export const corpusStore = {
  /** Whether the pgvector extension is installed. */
  async hasPgvector(db: Queryable): Promise<boolean | undefined> {
    const [row] = await db.query<{ present: boolean }>(
      "select exists (select 1 from pg_extension where extname = 'vector') as present",
    );
    return row?.present;
  },

  async findNamespace(db: Queryable, name: string): Promise<Namespace | null> {
    const [row] = await db.query<Namespace>(
      `select ${NS_COLUMNS} from platform.ai_namespaces where name = $1`,
      [
        name,
      ],
    );
    return row ?? null;
  },

  /** Inserts a namespace; null when the name is taken. */
  async insertNamespace(
    tx: Queryable,
    name: string,
    model: string,
    dimensions: number,
  ): Promise<Namespace | null> {
    const [created] = await tx.query<Namespace>(
      `insert into platform.ai_namespaces (name, embedding_model, dimensions) values ($1, $2, $3)
       on conflict (name) do nothing returning ${NS_COLUMNS}`,
      [name, model, dimensions],
    );
    return created ?? null;
  },

  /** The namespace's partial HNSW index over vectors of its dimensions. */
  async createIndex(tx: Queryable, namespaceId: string, dimensions: number): Promise<void> {
    const id = safeInt(namespaceId);
    const dims = safeInt(dimensions);
    await tx.exec(
      `create index if not exists ai_chunks_ns_${id} on platform.ai_chunks
         using hnsw ((embedding::vector(${dims})) vector_cosine_ops)
         where namespace_id = ${id} and array_length(embedding, 1) = ${dims}`,
    );
  },

  async dropIndex(tx: Queryable, namespaceId: string): Promise<void> {
    await tx.exec(`drop index if exists platform.ai_chunks_ns_${safeInt(namespaceId)}`);
  },

  /** Deletes a document (its chunks go with it). */
  async deleteDocument(tx: Queryable, namespaceId: string, documentId: string): Promise<void> {
    await tx.query("delete from platform.ai_documents where namespace_id = $1 and id = $2", [
      namespaceId,
      documentId,
    ]);
  },

  async insertDocument(
    tx: Queryable,
    namespaceId: string,
    documentId: string,
    metadata: Record<string, unknown>,
  ): Promise<void> {
    await tx.query(
      "insert into platform.ai_documents (namespace_id, id, metadata) values ($1, $2, $3::jsonb)",
      [namespaceId, documentId, JSON.stringify(metadata)],
    );
  },

  async touchNamespace(tx: Queryable, namespaceId: string): Promise<void> {
    await tx.query(
      "update platform.ai_namespaces set updated_at = now(), chunks_version = chunks_version + 1 where id = $1",
      [namespaceId],
    );
  },

  /** Inserts chunks in batches of 500, each batch one statement. */
  async insertChunks(
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
  },

  /**
   * The `topK` chunks closest to `vector` (pgvector's text form) by the namespace's HNSW index, with
   * `score >= threshold`, best first; run in a transaction (the search breadth is set for it).
   */
  async searchIndexed(
    tx: Queryable,
    ns: Namespace,
    vector: string,
    topK: number,
    threshold: number,
  ): Promise<Record<string, unknown>[]> {
    const dims = safeInt(ns.dimensions);
    await tx.query("select set_config('hnsw.ef_search', $1, true)", [String(Math.max(64, topK * 4))]);
    return await tx.query(
      withDocuments(
        ns,
        `select c.document_id, c.id::text as chunk_id, c.text,
                1 - (c.embedding::vector(${dims}) <=> $1::vector(${dims})) as score
           from platform.ai_chunks c
          where c.namespace_id = ${safeInt(ns.id)} and array_length(c.embedding, 1) = ${dims}
          order by c.embedding::vector(${dims}) <=> $1::vector(${dims})
          limit $2`,
      ),
      [vector, topK, threshold],
    );
  },

  /** The same search as an exact scan computing the dot product (`vector` as a `real[]` literal). */
  async searchScan(
    db: Queryable,
    ns: Namespace,
    vector: string,
    topK: number,
    threshold: number,
  ): Promise<Record<string, unknown>[]> {
    return await db.query(
      withDocuments(
        ns,
        `select c.document_id, c.id::text as chunk_id, c.text,
                (select sum(a::float8 * b::float8) from unnest(c.embedding, $1::real[]) as t(a, b)) as score
           from platform.ai_chunks c
          where c.namespace_id = ${safeInt(ns.id)}
          order by score desc nulls last
          limit $2`,
      ),
      [vector, topK, threshold],
    );
  },

  /** Every namespace with its counts, by name. */
  async listNamespaces(db: Queryable): Promise<Record<string, unknown>[]> {
    return await db.query<Record<string, unknown>>(
      `select n.name, n.embedding_model, n.created_at,
              (select count(*) from platform.ai_documents d where d.namespace_id = n.id) as documents,
              (select count(*) from platform.ai_chunks c where c.namespace_id = n.id) as chunks
         from platform.ai_namespaces n order by n.name`,
    );
  },

  async countNamespace(tx: Queryable, namespaceId: string): Promise<{ documents: number; chunks: number }> {
    const [counts] = await tx.query<{ documents: string; chunks: string }>(
      `select (select count(*) from platform.ai_documents where namespace_id = $1) as documents,
              (select count(*) from platform.ai_chunks where namespace_id = $1) as chunks`,
      [namespaceId],
    );
    return { documents: Number(counts!.documents), chunks: Number(counts!.chunks) };
  },

  /** Deletes a namespace's chunks, then the namespace. */
  async deleteNamespace(tx: Queryable, namespaceId: string): Promise<void> {
    await tx.query("delete from platform.ai_chunks where namespace_id = $1", [namespaceId]);
    await tx.query("delete from platform.ai_namespaces where id = $1", [namespaceId]);
  },

  /** The chunks of a namespace (id and text), in order. */
  async chunkTexts(db: Queryable, namespaceId: string): Promise<{ id: string; text: string }[]> {
    return await db.query(
      "select id::text as id, text from platform.ai_chunks where namespace_id = $1 order by ai_chunks.id",
      [namespaceId],
    );
  },

  /** Sets the embedding of each chunk, 500 per statement. */
  async updateEmbeddings(
    tx: Queryable,
    namespaceId: string,
    embeddings: { id: string; embedding: Float32Array }[],
  ): Promise<void> {
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
        [JSON.stringify(batch), namespaceId],
      );
    }
  },

  async setModel(tx: Queryable, namespaceId: string, model: string, dimensions: number): Promise<void> {
    await tx.query(
      `update platform.ai_namespaces set embedding_model = $1, dimensions = $2, updated_at = now(),
              vectors_version = vectors_version + 1 where id = $3`,
      [model, dimensions, namespaceId],
    );
    await tx.query("delete from platform.ai_vector_graphs where namespace_id = $1", [namespaceId]);
  },
};

/** The SQL behind the platform's own vector index (vector_index.ts): chunk ids, vectors and the saved graph. */
export const vectorIndexStore = {
  /** The ids of a namespace's chunks. */
  async chunkIds(db: Queryable, namespaceId: string): Promise<number[]> {
    const rows = await db.query<{ id: string }>(
      "select id::text as id from platform.ai_chunks where namespace_id = $1",
      [namespaceId],
    );
    return rows.map((r) => Number(r.id));
  },

  /** The vectors of a namespace's chunks (all, or those of `ids`), read in binary. */
  async chunkVectors(
    db: Queryable,
    namespaceId: string,
    ids?: number[],
  ): Promise<{ id: number; vector: Float32Array }[]> {
    const rows = await db.query<{ id: string; v: unknown }>(
      `select id::text as id, array_send(embedding) as v from platform.ai_chunks
        where namespace_id = $1 ${ids ? "and id = any($2::bigint[])" : ""}`,
      ids ? [namespaceId, `{${ids.join(",")}}`] : [namespaceId],
    );
    return rows.map((r) => ({ id: Number(r.id), vector: decodeRealArray(asBytes(r.v)) }));
  },

  /** The chunks behind search hits, with their document's metadata. */
  async hitRows(db: Queryable, namespaceId: string, ids: number[]): Promise<Record<string, unknown>[]> {
    return await db.query<Record<string, unknown>>(
      `select c.document_id, c.id::text as chunk_id, c.text, d.metadata
         from platform.ai_chunks c
         join platform.ai_documents d on d.namespace_id = c.namespace_id and d.id = c.document_id
        where c.namespace_id = $1 and c.id = any($2::bigint[])`,
      [namespaceId, `{${ids.join(",")}}`],
    );
  },

  /** The saved graph of a namespace, with the vectors version it was built for. */
  async loadGraph(
    db: Queryable,
    namespaceId: string,
  ): Promise<{ version: string; graph: Uint8Array } | null> {
    const [row] = await db.query<{ version: string; graph: unknown }>(
      "select vectors_version::text as version, graph from platform.ai_vector_graphs where namespace_id = $1",
      [namespaceId],
    );
    return row ? { version: row.version, graph: asBytes(row.graph) } : null;
  },

  async saveGraph(db: Queryable, namespaceId: string, version: string, graph: Uint8Array): Promise<void> {
    await db.query(
      `insert into platform.ai_vector_graphs (namespace_id, vectors_version, graph)
       select $1, $2, decode($3, 'hex') where exists (select 1 from platform.ai_namespaces where id = $1)
       on conflict (namespace_id) do update
         set vectors_version = excluded.vectors_version, graph = excluded.graph, saved_at = now()`,
      [namespaceId, version, toHex(graph)],
    );
  },
};

/** A bytea as bytes, whether the driver gives bytes or the `\\x…` text form. */
function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const hex = String(value).replace(/^\\x/, "");
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function toHex(bytes: Uint8Array): string {
  const parts = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) parts[i] = HEX[bytes[i]!]!;
  return parts.join("");
}

/** A one-dimension `real[]` in PostgreSQL's binary array form (array_send) as a Float32Array. */
function decodeRealArray(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getInt32(0) === 0) return new Float32Array(0);
  const n = view.getInt32(12);
  const out = new Float32Array(n);
  for (let i = 0, at = 20; i < n; i++, at += 8) out[i] = view.getFloat32(at + 4);
  return out;
}

/** A search's hits (`inner`) with their document's metadata, at or above the score $3, best first. */
function withDocuments(ns: Namespace, inner: string): string {
  return `select s.document_id, s.chunk_id, s.text, s.score, d.metadata
         from (${inner}) s
         join platform.ai_documents d on d.namespace_id = ${safeInt(ns.id)} and d.id = s.document_id
        where s.score >= $3
        order by s.score desc, s.chunk_id`;
}

/** The SQL of `platform.ai_usage`: one row per day, provider, model and kind. */
export const usageStore = {
  async add(db: Queryable, e: UsageEntry): Promise<void> {
    await db.query(
      `insert into platform.ai_usage as u
         (day, provider, model, kind, requests, cache_hits, prompt_tokens, completion_tokens, total_tokens)
       values (current_date, $1, $2, $3, 1, $4, $5, $6, $7)
       on conflict (day, provider, model, kind) do update set
         requests = u.requests + 1,
         cache_hits = u.cache_hits + excluded.cache_hits,
         prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
         completion_tokens = u.completion_tokens + excluded.completion_tokens,
         total_tokens = u.total_tokens + excluded.total_tokens`,
      [
        e.provider,
        e.model,
        e.kind,
        e.cacheHit ? 1 : 0,
        e.usage.prompt_tokens,
        e.usage.completion_tokens,
        e.usage.total_tokens,
      ],
    );
  },

  /** The rows of the last `days` days, newest first. */
  async list(db: Queryable, days: number): Promise<Record<string, unknown>[]> {
    return await db.query<Record<string, unknown>>(
      `select day::text as day, provider, model, kind, requests, cache_hits, prompt_tokens, completion_tokens,
              total_tokens
         from platform.ai_usage where day > current_date - $1::int
        order by day desc, provider, model, kind`,
      [days],
    );
  },
};

/** A column of a readable table. */
export interface ColumnRow {
  schema: string;
  table: string;
  column: string;
  type: string;
}

/** The SQL around NL-to-SQL: the catalog the model sees, and the session a generated SELECT runs in. */
export const nl2sqlStore = {
  /** The columns `role` may select, outside `excludedSchemas` and `pg_*`. */
  async readableColumns(db: Queryable, role: string, excludedSchemas: string[]): Promise<ColumnRow[]> {
    return await db.query<ColumnRow>(
      `select n.nspname as schema, c.relname as "table", a.attname as "column",
              format_type(a.atttypid, a.atttypmod) as type
         from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
         join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where c.relkind in ('r', 'v', 'm', 'p', 'f')
          and n.nspname <> all ($2::text[]) and n.nspname not like 'pg\\_%'
          and has_schema_privilege($1, n.oid, 'USAGE')
          and has_any_column_privilege($1, c.oid, 'SELECT')
          and has_column_privilege($1, c.oid, a.attnum, 'SELECT')
        order by n.nspname, c.relname, a.attnum`,
      [role, `{${excludedSchemas.join(",")}}`],
    );
  },

  /** Makes the transaction read only, as `role` with `claims`, on the public schema. */
  async actAs(tx: Queryable, role: string, claims: Record<string, unknown>): Promise<void> {
    await tx.exec("set transaction read only");
    await tx.exec("set local search_path = public");
    await tx.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify(claims)]);
    await tx.exec(`set local role ${quoteIdent(role)}`);
  },

  /**
   * The plan (`explain (format json)`) and then, when `accept` takes it, the rows of a checked SELECT, at most
   * `limit`. One statement through the extended protocol each: a second statement could not run even if one
   * slipped in.
   */
  async select(
    tx: Queryable,
    sql: string,
    limit: number,
    accept: (plan: Record<string, unknown> | undefined) => void,
  ): Promise<Record<string, unknown>[]> {
    const wrapped = `select * from (${sql}) as nl2sql_result limit $1`;
    const [plan] = await tx.query<Record<string, unknown>>(`explain (format json) ${wrapped}`, [limit]);
    accept(plan);
    return [...await tx.query(wrapped, [limit])];
  },
};

/** A row of `platform.ai_sessions` in the control database. */
export interface AiSessionRow {
  project_ref: string;
  budget_remaining: number;
  held: number;
  expires_at: Date;
}

/** The SQL of AI session tickets, in the control database (the state of record for every instance). */
export const sessionStore = {
  /** Stores a new session under its ticket's hash. */
  async insert(
    control: Queryable,
    hash: string,
    project: string,
    budget: number,
    expiresAt: Date,
  ): Promise<void> {
    await control.query(
      `insert into platform.ai_sessions (ticket_hash, project_ref, budget_remaining, expires_at)
       values ($1, $2, $3, $4::timestamptz)`,
      [hash, project, budget, expiresAt.toISOString()],
    );
  },

  /** The live session of a hash, locked for the transaction `tx`; null when unknown, revoked or expired. */
  async lockLive(tx: Queryable, hash: string): Promise<AiSessionRow | null> {
    const [row] = await tx.query<
      { project_ref: string; budget_remaining: string; held: string; expires_at: Date | string }
    >(
      `select project_ref, budget_remaining::text, held::text, expires_at from platform.ai_sessions
       where ticket_hash = $1 and expires_at > now() for update`,
      [hash],
    );
    return row
      ? {
        project_ref: row.project_ref,
        budget_remaining: Number(row.budget_remaining),
        held: Number(row.held),
        expires_at: new Date(row.expires_at),
      }
      : null;
  },

  /** Sets the budget and the held tokens of a session. */
  async setBudget(tx: Queryable, hash: string, budget: number, held: number): Promise<void> {
    await tx.query(
      "update platform.ai_sessions set budget_remaining = $2, held = $3 where ticket_hash = $1",
      [
        hash,
        budget,
        held,
      ],
    );
  },

  /** Deletes a session; true when there was one. */
  async delete(control: Queryable, hash: string): Promise<boolean> {
    const rows = await control.query("delete from platform.ai_sessions where ticket_hash = $1 returning 1", [
      hash,
    ]);
    return rows.length > 0;
  },

  /** Deletes the sessions that expired before `before`. */
  async prune(control: Queryable, before: Date): Promise<void> {
    await control.query("delete from platform.ai_sessions where expires_at < $1::timestamptz", [
      before.toISOString(),
    ]);
  },
};
