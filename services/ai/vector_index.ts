import type { Db } from "../../db/driver.ts";
import { describeError, log } from "../../lib/log.ts";
import type { Namespace } from "./corpus.ts";
import { Hnsw } from "./hnsw.ts";
import { vectorIndexStore } from "./store.ts";

/** One namespace's index in memory, with the versions of the namespace it reflects. */
interface Loaded {
  index: Hnsw;
  dims: number;
  chunksVersion: string;
  vectorsVersion: string;
  /** Keys added since the graph was last saved. */
  unsaved: number;
}

/** Above this share of tombstones the graph is rebuilt from the live vectors. */
const MAX_TOMBSTONES = 0.3;
/** A graph is saved again once this many keys were added since the last save (and after every build). */
const SAVE_EVERY = 2000;

/**
 * VectorIndexes keeps an HNSW index per project database and namespace, for databases without pgvector. The
 * namespace row carries two counters: `chunks_version` moves on every write of chunks (the index catches up by
 * comparing chunk ids, so another instance's writes show up on the next search) and `vectors_version` on a
 * reindex (the index is rebuilt). The graph is saved in the database, so a restart reads it back with the vectors
 * instead of building it again.
 */
export class VectorIndexes {
  private readonly loaded = new WeakMap<Db, Map<string, Promise<Loaded | null>>>();

  /** The `topK` chunks nearest `vector` with `score >= threshold`, best first, as the exact scan gives them. */
  async search(
    db: Db,
    ns: Namespace,
    vector: Float32Array,
    topK: number,
    threshold: number,
  ): Promise<Record<string, unknown>[]> {
    const loaded = await this.current(db, ns);
    if (!loaded) return [];
    const hits = loaded.index.search(vector, topK, Math.max(300, topK * 10)).filter((h) =>
      h.score >= threshold
    );
    if (hits.length === 0) return [];
    const rows = await vectorIndexStore.hitRows(db, ns.id, hits.map((h) => h.key));
    const scores = new Map(hits.map((h) => [String(h.key), h.score]));
    return rows.map((r): Record<string, unknown> => ({ ...r, score: scores.get(String(r.chunk_id)) }))
      .sort((a, b) =>
        (b.score as number) - (a.score as number) || compareIds(String(a.chunk_id), String(b.chunk_id))
      );
  }

  /** Forgets a namespace's index in this instance (the namespace was dropped). */
  forget(db: Db, namespaceId: string): void {
    this.loaded.get(db)?.delete(namespaceId);
  }

  /** The index of `ns`, loaded or brought up to the versions `ns` carries (one load at a time per namespace). */
  private current(db: Db, ns: Namespace): Promise<Loaded | null> {
    let perDb = this.loaded.get(db);
    if (!perDb) this.loaded.set(db, perDb = new Map());
    const previous = perDb.get(ns.id) ?? Promise.resolve(null);
    const next = previous.catch(() => null).then((had) => this.refresh(db, ns, had));
    perDb.set(ns.id, next);
    next.catch(() => {
      if (perDb.get(ns.id) === next) perDb.delete(ns.id);
    });
    return next;
  }

  private async refresh(db: Db, ns: Namespace, had: Loaded | null): Promise<Loaded | null> {
    const chunksVersion = String(ns.chunks_version ?? "0");
    const vectorsVersion = String(ns.vectors_version ?? "0");
    let loaded = had;
    if (
      !loaded || loaded.vectorsVersion !== vectorsVersion || loaded.dims !== ns.dimensions ||
      loaded.index.tombstoneRatio > MAX_TOMBSTONES
    ) {
      loaded = await this.load(
        db,
        ns,
        vectorsVersion,
        chunksVersion,
        loaded?.vectorsVersion === vectorsVersion,
      );
    } else if (loaded.chunksVersion !== chunksVersion) {
      await this.catchUp(db, ns, loaded);
      loaded.chunksVersion = chunksVersion;
    }
    if (loaded.unsaved >= SAVE_EVERY) await this.save(db, ns, loaded);
    return loaded;
  }

  /** Reads every vector and the saved graph (unless `rebuild`), and adds what the graph lacks. */
  private async load(
    db: Db,
    ns: Namespace,
    vectorsVersion: string,
    chunksVersion: string,
    rebuild: boolean,
  ): Promise<Loaded> {
    const rows = await vectorIndexStore.chunkVectors(db, ns.id);
    const vectors = new Map<number, Float32Array>();
    for (const r of rows) if (r.vector.length === ns.dimensions) vectors.set(r.id, r.vector);
    const saved = rebuild ? null : await vectorIndexStore.loadGraph(db, ns.id);
    const fromGraph = saved?.version === vectorsVersion
      ? Hnsw.deserialize(saved.graph, ns.dimensions, (key) => vectors.get(key))
      : null;
    const index = fromGraph ?? new Hnsw(ns.dimensions);
    let added = 0;
    for (const key of [...vectors.keys()].sort((a, b) => a - b)) {
      if (!index.has(key)) {
        index.add(key, vectors.get(key)!);
        added++;
      }
    }
    const loaded = { index, dims: ns.dimensions, chunksVersion, vectorsVersion, unsaved: added };
    if (!fromGraph || added > 0) loaded.unsaved = Math.max(SAVE_EVERY, added);
    return loaded;
  }

  /** Removes the chunks gone since the index was loaded and adds the new ones (any instance's writes). */
  private async catchUp(db: Db, ns: Namespace, loaded: Loaded): Promise<void> {
    const ids = new Set(await vectorIndexStore.chunkIds(db, ns.id));
    for (const key of [...loaded.index.liveKeys()]) if (!ids.has(key)) loaded.index.remove(key);
    const missing = [...ids].filter((id) => !loaded.index.has(id)).sort((a, b) => a - b);
    for (let i = 0; i < missing.length; i += 5000) {
      for (const r of await vectorIndexStore.chunkVectors(db, ns.id, missing.slice(i, i + 5000))) {
        if (r.vector.length === loaded.dims) loaded.index.add(r.id, r.vector);
      }
    }
    loaded.unsaved += missing.length;
  }

  /** Saves the graph; a failure only costs a rebuild at the next start. */
  private async save(db: Db, ns: Namespace, loaded: Loaded): Promise<void> {
    try {
      await vectorIndexStore.saveGraph(db, ns.id, loaded.vectorsVersion, loaded.index.serialize());
      loaded.unsaved = 0;
    } catch (err) {
      log.warn("ai: could not save a vector index", { namespace: ns.name, cause: describeError(err) });
    }
  }
}

/** Chunk ids compared as text, as the exact scan orders ties (`order by score desc, chunk_id`). */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
