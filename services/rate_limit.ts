/** The answer of {@linkcode TokenBucket.take}. */
export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Options of a {@linkcode TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens refilled per minute; also the burst size. */
  perMinute: number;
  /** Keys tracked at most; the least recently refilled is forgotten first. */
  maxKeys?: number;
}

/**
 * TokenBucket limits the rate of an action per key (a client, a user, an IP) in this process: each key holds up
 * to `perMinute` tokens, refilled continuously.
 */
export class TokenBucket {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.perMs = options.perMinute / 60_000;
  }

  /** Takes one token for `key`, or says in how many seconds one will be there. */
  take(key: string, now = Date.now()): Take {
    const capacity = this.options.perMinute;
    const bucket = this.buckets.get(key) ?? { tokens: capacity, at: now };
    this.buckets.delete(key);
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    if (this.buckets.size >= (this.options.maxKeys ?? 100_000)) {
      const oldest = this.buckets.keys().next();
      if (!oldest.done) this.buckets.delete(oldest.value);
    }
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }
}
