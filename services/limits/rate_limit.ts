import type { Queryable } from "../../db/driver.ts";
import { describeError, log } from "../../lib/log.ts";
import { rateStore } from "./store.ts";

const WINDOW_MS = 60_000;
const FLUSH_MS = 250;
const PRUNE_EVERY_MS = 60_000;

/** The answer of {@linkcode SharedRateLimit.take}. */
export type Take = { ok: true } | { ok: false; retryAfterSeconds: number };

const TAKEN: Take = Object.freeze({ ok: true });

/** Options of a {@linkcode SharedRateLimit}. */
export interface SharedRateLimitOptions {
  /** Actions per key per UTC minute, across every instance. */
  perMinute: number;
  /** What the limit is called in the log when its counts cannot be stored. */
  name: string;
  /** Keys tracked at most; the oldest is forgotten first. */
  maxKeys?: number;
  /** How often the counts are added to the shared ones (ms). */
  flushMs?: number;
}

/** What this instance knows of one key in the current minute. */
interface Window {
  start: number;
  shared: number; // the total of every instance as of this instance's last flush of the key
  flushing: number; // taken here and being added to the shared count by the flush in flight
  pending: number; // taken here since (less what was given back: may be negative)
}

/**
 * SharedRateLimit limits an action per key per UTC minute across every instance that shares the control
 * database: a fixed window whose check is made in memory, and whose counts are added to
 * `platform.invoke_rate_windows` every 250 ms with one upsert that returns the totals of every instance. An
 * instance refuses only once the shared count it knows has reached the limit, so a refusal is never early; it
 * may accept, above the limit, the actions it takes for a key in one flush window before it learns the others'
 * counts. Each limit keys its counts under a scope of its own (the invoke limit, the password limit, the AI
 * gateway's), so they share the table and the engine but not the counts.
 */
export class SharedRateLimit {
  private readonly windows = new Map<string, Window>();
  private readonly timer: ReturnType<typeof setInterval>;
  private flushing: Promise<void> | null = null;
  private prunedAt = 0;

  constructor(private readonly control: Queryable, private readonly options: SharedRateLimitOptions) {
    this.timer = setInterval(() => this.flush(), options.flushMs ?? FLUSH_MS);
  }

  /** Takes one action for `key`, or says in how many seconds the next minute starts. */
  take(key: string, now = Date.now()): Take {
    const start = now - now % WINDOW_MS;
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      if (w) this.windows.delete(key);
      else if (this.windows.size >= (this.options.maxKeys ?? 100_000)) this.evictOne();
      w = { start, shared: 0, flushing: 0, pending: 0 };
      this.windows.set(key, w);
    }
    if (w.shared + w.flushing + w.pending >= this.options.perMinute) {
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
    }
    w.pending++;
    return TAKEN;
  }

  /** Returns an action taken for `key` in the current minute: it turned out not to count (a successful sign-in). */
  giveBack(key: string, now = Date.now()): void {
    const w = this.windows.get(key);
    if (w && w.start === now - now % WINDOW_MS) w.pending--;
  }

  private evictOne(): void {
    for (const [key, w] of this.windows) {
      if (w.pending === 0 && w.flushing === 0) {
        this.windows.delete(key);
        return;
      }
    }
  }

  /** Adds the pending counts to the shared ones and learns every instance's totals; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => this.flushing = null);
    return this.flushing;
  }

  private async write(): Promise<void> {
    const current = Date.now() - Date.now() % WINDOW_MS;
    const keys: string[] = [];
    const starts: string[] = [];
    const counts: number[] = [];
    const taken: Window[] = [];
    for (const [key, w] of this.windows) {
      if (w.start < current && w.pending === 0) {
        this.windows.delete(key); // a past minute: nothing more to learn
        continue;
      }
      if (w.pending === 0) continue;
      keys.push(key.replaceAll("\u0000", "\u0001")); // PostgreSQL text holds no NUL
      starts.push(new Date(w.start).toISOString());
      counts.push(w.pending);
      taken.push(w);
    }
    if (keys.length === 0) return;
    // While the upsert runs, its counts are still counted here: a take meanwhile sees them.
    for (let i = 0; i < taken.length; i++) {
      taken[i]!.pending -= counts[i]!;
      taken[i]!.flushing = counts[i]!;
    }
    try {
      const totals = await rateStore.add(this.control, keys, starts, counts);
      for (const [k, total] of totals) {
        // Flushes run one at a time: each total is newer than the last (lower only after a give-back).
        const w = taken[k - 1];
        if (w) w.shared = total;
      }
      for (const w of taken) w.flushing = 0;
    } catch (err) {
      for (let i = 0; i < taken.length; i++) {
        taken[i]!.pending += counts[i]!;
        taken[i]!.flushing = 0;
      }
      log.warn("cannot store rate limit counts", {
        limit: this.options.name,
        keys: keys.length,
        cause: describeError(err),
      });
      return;
    }
    await this.prune();
  }

  /** Deletes the minutes that are over, at most once a minute. */
  private async prune(): Promise<void> {
    const now = Date.now();
    if (now - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = now;
    try {
      await rateStore.prune(this.control, new Date(now - now % WINDOW_MS - WINDOW_MS).toISOString());
    } catch (err) {
      log.warn("cannot delete old rate limit counts", {
        limit: this.options.name,
        cause: describeError(err),
      });
    }
  }

  /** Stops the timer and stores what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
