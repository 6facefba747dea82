import { AppError } from "../errors.ts";

/**
 * RateLimiter is a token bucket per client key: `perMinute` calls of burst, refilled continuously. It throws
 * 429 rate_limit_exceeded with `Retry-After` (seconds) when a bucket is empty.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number, private readonly maxKeys = 100_000) {}

  /** Takes one token for `key`, or throws 429. */
  take(key: string, now = Date.now()): void {
    const rate = this.perMinute / 60_000; // tokens per ms
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.sweep(now);
      bucket = { tokens: this.perMinute, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * rate);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000));
    throw new AppError(429, "rate_limit_exceeded", `Too many calls: limit is ${this.perMinute} per minute`, {
      headers: { "Retry-After": String(retryAfter) },
    });
  }

  private sweep(now: number): void {
    const rate = this.perMinute / 60_000;
    for (const [key, b] of this.buckets) {
      if (b.tokens + (now - b.at) * rate >= this.perMinute) this.buckets.delete(key);
    }
    if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
  }
}
