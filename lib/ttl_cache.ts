/** Options of a {@linkcode TtlCache}. */
export interface TtlCacheOptions {
  /** Milliseconds an entry lives. */
  ttlMs: number;
  /** Entries kept at most; the oldest is evicted first. */
  maxEntries: number;
}

/** TtlCache is a bounded map whose entries expire, for hot lookups (keys, projects, sessions). */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

  constructor(private readonly options: TtlCacheOptions) {}

  /** The live value of `key`, if any. */
  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  /** Stores `value`, living `ttlMs` or the given shorter time. */
  set(key: K, value: V, ttlMs = this.options.ttlMs): void {
    this.entries.delete(key);
    if (this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expires: Date.now() + Math.min(ttlMs, this.options.ttlMs) });
  }

  /** Removes `key`. */
  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Removes every entry for which `match` is true. */
  deleteWhere(match: (value: V, key: K) => boolean): void {
    for (const [k, e] of this.entries) if (match(e.value, k)) this.entries.delete(k);
  }
}
