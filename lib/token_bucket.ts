/** The answer of {@linkcode TokenBucket.take}. */
export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

const TAKEN: Take = Object.freeze({ ok: true });
const REORDER_MS = 1_000;

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
  private readonly buckets = new Map<string, { tokens: number; at: number; movedAt: number }>();
  private readonly perMs: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.perMs = options.perMinute / 60_000;
  }

  /** Takes one token for `key`, or says in how many seconds one will be there. */
  take(key: string, now = Date.now()): Take {
    const capacity = this.options.perMinute;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= (this.options.maxKeys ?? 100_000)) {
        const oldest = this.buckets.keys().next();
        if (!oldest.done) this.buckets.delete(oldest.value);
      }
      bucket = { tokens: capacity, at: now, movedAt: now };
      this.buckets.set(key, bucket);
    } else if (now - bucket.movedAt >= REORDER_MS) {
      // Moved to the young end (least recently used first out), at most once a second: moving a key on every
      // take costs a map deletion and insertion on the hottest paths.
      this.buckets.delete(key);
      this.buckets.set(key, bucket);
      bucket.movedAt = now;
    }
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return TAKEN;
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }

  /** Returns a token taken for `key`: the action turned out not to count (a successful sign-in). */
  giveBack(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.options.perMinute, bucket.tokens + 1);
  }
}
