/** Options of a {@linkcode TtlCache}. */
export interface TtlCacheOptions<V = unknown> {
  /** Milliseconds an entry lives. */
  ttlMs: number;
  /** Entries kept at most; the oldest is evicted first. */
  maxEntries: number;
  /**
   * Approximate bytes kept at most, for values whose size the caller does not control (code, payloads). The
   * least recently used entries go first (a read counts as a use); a value larger than this is not kept.
   */
  maxBytes?: number;
  /** Approximate bytes of a value (default: the length of its JSON; a string's own length). */
  sizeOf?: (value: V) => number;
}

interface Entry<V> {
  value: V;
  expires: number;
  bytes: number;
}

/** The length of a value's JSON, or of the string itself: an estimate, cheap next to what it bounds. */
export function jsonSize(value: unknown): number {
  if (typeof value === "string") return value.length;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0; // cycles, BigInt: not something a byte-bounded cache holds
  }
}

/** TtlCache is a bounded map whose entries expire, for hot lookups (keys, projects, sessions). */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private totalBytes = 0;
  /** The entry last set or read (with `maxBytes`): already the most recently used, it need not move. */
  private newest: K | undefined;

  constructor(private readonly options: TtlCacheOptions<V>) {}

  /** Approximate bytes of the live and not yet swept values (0 without `maxBytes`). */
  get bytes(): number {
    return this.totalBytes;
  }

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  /** The live value of `key`, if any. */
  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires <= Date.now()) {
      this.remove(key, hit);
      return undefined;
    }
    if (this.options.maxBytes !== undefined && key !== this.newest) {
      // Most recently used last: eviction takes from the front. A hot key read again and again moves once.
      this.entries.delete(key);
      this.entries.set(key, hit);
      this.newest = key;
    }
    return hit.value;
  }

  /** Stores `value`, living `ttlMs` or the given shorter time. */
  set(key: K, value: V, ttlMs = this.options.ttlMs): void {
    this.delete(key);
    const { maxBytes } = this.options;
    const bytes = maxBytes === undefined ? 0 : (this.options.sizeOf ?? jsonSize)(value);
    if (maxBytes !== undefined && bytes > maxBytes) return; // it would push out everything else
    if (this.entries.size >= this.options.maxEntries) this.evictOldest();
    while (maxBytes !== undefined && this.totalBytes + bytes > maxBytes && this.entries.size > 0) {
      this.evictOldest();
    }
    this.entries.set(key, { value, expires: Date.now() + Math.min(ttlMs, this.options.ttlMs), bytes });
    this.totalBytes += bytes;
    this.newest = key;
  }

  /** Removes `key`. */
  delete(key: K): void {
    const hit = this.entries.get(key);
    if (hit) this.remove(key, hit);
  }

  /** Removes every entry for which `match` is true. */
  deleteWhere(match: (value: V, key: K) => boolean): void {
    for (const [k, e] of this.entries) if (match(e.value, k)) this.remove(k, e);
  }

  private evictOldest(): void {
    const oldest = this.entries.entries().next();
    if (!oldest.done) this.remove(oldest.value[0], oldest.value[1]);
  }

  private remove(key: K, entry: Entry<V>): void {
    this.entries.delete(key);
    if (key === this.newest) this.newest = undefined;
    this.totalBytes -= entry.bytes;
  }
}
