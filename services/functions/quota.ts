import type { Queryable } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import { usageStore } from "./store.ts";

const FLUSH_MS = 1_000;
const REFRESH_MS = 2_000; // the plan and the count are read again at most this long after the last read

/** Sets (or, with null, removes) the monthly invocation quota of project `ref` in the control database. */
export function setPlan(control: Queryable, ref: string, invocationsPerMonth: number | null): Promise<void> {
  return usageStore.setPlan(control, ref, invocationsPerMonth);
}

interface ProjectUsage {
  month: string;
  stored: number; // the shared count as last read or written
  pending: number; // counted here, not yet added to the shared count
  limit: number;
  readAt: number;
}

/**
 * InvocationQuota counts invocations per project per month in the control database and refuses calls past
 * the plan's `invocations_per_month` with 403 QUOTA_EXCEEDED. The check is made in memory; counts are added
 * to the shared row once per second with one atomic upsert per project, which returns the total of every
 * instance, and the plan and count are read again every 2 s. The instances may therefore together accept, above
 * the quota, about the calls they take in 3 s before they see each other's counts.
 */
export class InvocationQuota {
  private readonly usage = new Map<string, ProjectUsage>();
  private readonly timer: ReturnType<typeof setInterval>;
  /** The last flush asked for: the next runs after it. */
  private flushed: Promise<void> = Promise.resolve();

  constructor(private readonly control: Queryable, private readonly defaultLimit: number) {
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
  }

  private async current(ref: string, now: Date): Promise<ProjectUsage> {
    const month = now.toISOString().slice(0, 7);
    let u = this.usage.get(ref);
    if (!u || u.month !== month || Date.now() - u.readAt > REFRESH_MS) {
      const row = await usageStore.read(this.control, ref, month);
      const fresh = {
        month,
        stored: row.count,
        pending: u && u.month === month ? u.pending : 0,
        limit: row.plan ?? this.defaultLimit,
        readAt: Date.now(),
      };
      if (u && u.month !== month && u.pending > 0) await this.add(ref, u.month, u.pending);
      u = fresh;
      this.usage.set(ref, u);
    }
    return u;
  }

  /**
   * Counts one invocation of project `ref`, or throws 403 QUOTA_EXCEEDED when the month's quota is spent.
   * Synchronous while the project's usage is fresh; a promise when it must be read first.
   */
  take(ref: string, now?: Date): void | Promise<void> {
    const u = this.usage.get(ref);
    const t = Date.now();
    if (u && t - u.readAt <= REFRESH_MS && u.month === this.monthOf(now?.getTime() ?? t)) {
      return this.count(ref, u);
    }
    return this.current(ref, now ?? new Date(t)).then((fresh) => this.count(ref, fresh));
  }

  // The month of `at` (UTC, YYYY-MM), remembered until the month ends: no Date per call.
  private month = { value: "", from: 0, until: 0 };

  private monthOf(at: number): string {
    if (at < this.month.from || at >= this.month.until) {
      const d = new Date(at);
      this.month = {
        value: d.toISOString().slice(0, 7),
        from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
        until: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
      };
    }
    return this.month.value;
  }

  private count(ref: string, u: ProjectUsage): void {
    if (u.limit > 0 && u.stored + u.pending >= u.limit) {
      throw errors.quotaExceeded(
        `Monthly invocation quota of project "${ref}" is exhausted (${u.limit} per month)`,
      );
    }
    u.pending++;
  }

  /** Adds `n` to the shared count of a month and returns the new total. */
  private async add(ref: string, month: string, n: number): Promise<number> {
    return await usageStore.add(this.control, ref, month, n);
  }

  /**
   * Adds the pending counts to the shared ones, and learns the totals of every instance. Flushes run one after
   * the other: one that returns has stored every count taken before it was called, even those an earlier flush
   * (the timer's) was storing meanwhile.
   */
  flush(): Promise<void> {
    this.flushed = this.flushed.then(() => this.store());
    return this.flushed;
  }

  private async store(): Promise<void> {
    for (const [ref, u] of this.usage) {
      if (u.pending === 0) continue;
      const n = u.pending;
      u.pending = 0;
      try {
        u.stored = await this.add(ref, u.month, n);
      } catch (err) {
        // Counted again on the usage as it is now (a read meanwhile replaces it); lost if its month ended meanwhile.
        const now = this.usage.get(ref);
        (now?.month === u.month ? now : u).pending += n;
        log.warn("cannot store invocation counts", { project: ref, cause: describeError(err) });
      }
    }
  }

  /** Forgets what is known of the projects' plans, so that the next call reads them again. */
  forget(): void {
    for (const u of this.usage.values()) u.readAt = 0;
  }

  /** Stops the timer and stores what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
