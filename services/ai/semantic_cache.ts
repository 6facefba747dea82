import { sha256Hex } from "../../lib/crypto.ts";
import { jsonSize } from "../../lib/ttl_cache.ts";
import type { ChatMessage } from "./providers.ts";

/** Options of a {@linkcode SemanticCache}. */
export interface SemanticCacheOptions {
  /** Cosine similarity a hit needs, 0–1 (`AI_CACHE_THRESHOLD`). */
  threshold: number;
  /** Milliseconds an entry lives (`AI_CACHE_TTL_SECS`). */
  ttlMs: number;
  /** Entries kept per project; the oldest goes first (`AI_CACHE_MAX_ENTRIES`). */
  maxEntriesPerProject: number;
  /** Approximate bytes kept per project (questions, answers, embeddings); the oldest go first (default 32 MB). */
  maxBytesPerProject?: number;
}

// Answers are as long as the users' prompts and the models make them: a project's cache is bounded in bytes too.
const MAX_BYTES_PER_PROJECT = 32 * 1048576;

/** Everything but the last user message: a difference in any of it must never hit. */
export interface PartitionInput {
  project: string;
  provider: string;
  model: string;
  embeddingModel: string;
  temperature?: number;
  max_tokens?: number;
  /** Every message before the last user message, the system prompt included. */
  context: ChatMessage[];
}

/** The key of a partition: a SHA-256 of its exact inputs. */
export function partitionKey(p: PartitionInput): Promise<string> {
  return sha256Hex(JSON.stringify([
    p.project,
    p.provider,
    p.model,
    p.embeddingModel,
    p.temperature ?? null,
    p.max_tokens ?? null,
    p.context.map((m) => [m.role, m.content]),
  ]));
}

interface Entry<V> {
  id: number;
  partition: string;
  text: string;
  value: V;
  expires: number;
  /** Its row in the partition's matrix. */
  row: number;
  /** Approximate size: its question, its answer as JSON and its embedding. */
  bytes: number;
}

/**
 * A partition keeps its embeddings in one contiguous matrix (row i = entries[i]), so that a lookup is a tight
 * loop over one typed array rather than a walk over objects.
 */
interface Partition<V> {
  entries: Entry<V>[];
  byText: Map<string, Entry<V>>;
  dims: number;
  matrix: Float32Array;
}

interface ProjectCache<V> {
  partitions: Map<string, Partition<V>>;
  /** Every live entry by id, in insertion order: the first is the one to evict. */
  order: Map<number, Entry<V>>;
  /** Approximate size of its entries. */
  bytes: number;
}

/** A hit: the value and how close its question was. */
export interface CacheHit<V> {
  value: V;
  similarity: number;
}

/**
 * SemanticCache keeps chat answers per project, in partitions keyed by {@linkcode partitionKey}: inside a
 * partition a lookup hits when the cosine similarity between the embeddings of the last user messages
 * reaches the threshold. Entries expire after a TTL and each project keeps a bounded number. The cache lives
 * in the instance's memory: several instances each keep their own (a miss costs a provider call, never a
 * wrong answer).
 */
export class SemanticCache<V> {
  private readonly projects = new Map<string, ProjectCache<V>>();
  private nextId = 1;

  constructor(private readonly options: SemanticCacheOptions) {}

  /**
   * The best live entry of a partition whose similarity reaches the threshold, among those `accept` takes
   * (all when absent).
   */
  lookup(
    project: string,
    partition: string,
    text: string,
    embedding: Float32Array,
    accept?: (value: V) => boolean,
  ): CacheHit<V> | null {
    const part = this.projects.get(project)?.partitions.get(partition);
    if (!part) return null;
    const now = Date.now();
    const exact = part.byText.get(text);
    if (exact && exact.expires > now && (!accept || accept(exact.value))) {
      return { value: exact.value, similarity: 1 };
    }
    let best = -1;
    let bestScore = -Infinity;
    let expired = false;
    const { matrix, dims, entries } = part;
    if (embedding.length === dims) {
      for (let r = 0; r < entries.length; r++) {
        if (entries[r]!.expires <= now) {
          expired = true;
          continue;
        }
        const score = dotRow(matrix, r * dims, embedding, dims);
        if (score > bestScore && (!accept || accept(entries[r]!.value))) {
          bestScore = score;
          best = r;
        }
      }
    }
    const hit = best >= 0 && bestScore >= this.options.threshold ? entries[best]!.value : undefined;
    if (expired) this.sweep(project, now);
    if (hit === undefined) return null;
    return { value: hit, similarity: Math.min(1, bestScore) };
  }

  /** Stores an answer; evicts the project's oldest entry past the bound. */
  store(project: string, partition: string, text: string, embedding: Float32Array, value: V): void {
    const bytes = text.length + jsonSize(value) + embedding.length * 4;
    const maxBytes = this.options.maxBytesPerProject ?? MAX_BYTES_PER_PROJECT;
    if (bytes > maxBytes) return; // it would push out everything else (an earlier answer stays)
    let cache = this.projects.get(project);
    if (!cache) {
      cache = { partitions: new Map(), order: new Map(), bytes: 0 };
      this.projects.set(project, cache);
    }
    let part = cache.partitions.get(partition);
    if (part && part.dims !== embedding.length) {
      for (const e of [...part.entries]) this.remove(cache, e);
      part = undefined;
    }
    if (!part) {
      part = {
        entries: [],
        byText: new Map(),
        dims: embedding.length,
        matrix: new Float32Array(embedding.length * 8),
      };
      cache.partitions.set(partition, part);
    }
    const previous = part.byText.get(text);
    if (previous) this.remove(cache, previous);
    while (cache.order.size >= this.options.maxEntriesPerProject || cache.bytes + bytes > maxBytes) {
      const oldest = cache.order.values().next();
      if (oldest.done) break;
      this.remove(cache, oldest.value);
    }
    const entry: Entry<V> = {
      id: this.nextId++,
      partition,
      text,
      value,
      expires: Date.now() + this.options.ttlMs,
      row: part.entries.length,
      bytes,
    };
    if ((entry.row + 1) * part.dims > part.matrix.length) {
      const grown = new Float32Array(part.matrix.length * 2);
      grown.set(part.matrix);
      part.matrix = grown;
    }
    part.matrix.set(embedding, entry.row * part.dims);
    part.entries.push(entry);
    part.byText.set(text, entry);
    cache.order.set(entry.id, entry);
    cache.bytes += bytes;
  }

  /** Entries the project holds (live or not yet swept). */
  size(project: string): number {
    return this.projects.get(project)?.order.size ?? 0;
  }

  /** Forgets a project's entries. */
  clear(project: string): void {
    this.projects.delete(project);
  }

  private remove(cache: ProjectCache<V>, entry: Entry<V>): void {
    if (cache.order.delete(entry.id)) cache.bytes -= entry.bytes;
    const part = cache.partitions.get(entry.partition);
    if (!part) return;
    // Swap-remove: the last row moves into the freed one.
    const i = entry.row;
    const last = part.entries.length - 1;
    if (part.entries[i] === entry) {
      if (i !== last) {
        const moved = part.entries[last]!;
        part.entries[i] = moved;
        moved.row = i;
        part.matrix.copyWithin(i * part.dims, last * part.dims, (last + 1) * part.dims);
      }
      part.entries.pop();
    }
    if (part.byText.get(entry.text) === entry) part.byText.delete(entry.text);
    if (part.entries.length === 0) cache.partitions.delete(entry.partition);
  }

  private sweep(project: string, now: number): void {
    const cache = this.projects.get(project);
    if (!cache) return;
    for (const e of [...cache.order.values()]) if (e.expires <= now) this.remove(cache, e);
  }
}

/** The dot product of row `offset` of a matrix with `v`, unrolled by four. */
function dotRow(m: Float32Array, offset: number, v: Float32Array, dims: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let i = 0;
  for (; i + 3 < dims; i += 4) {
    s0 += m[offset + i]! * v[i]!;
    s1 += m[offset + i + 1]! * v[i + 1]!;
    s2 += m[offset + i + 2]! * v[i + 2]!;
    s3 += m[offset + i + 3]! * v[i + 3]!;
  }
  for (; i < dims; i++) s0 += m[offset + i]! * v[i]!;
  return s0 + s1 + s2 + s3;
}
