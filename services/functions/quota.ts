import { errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";

/** The KV key of a project's plan: `{ invocations_per_month: number }` (absent: the configured default). */
export function planKey(ref: string): Deno.KvKey {
  return ["plans", ref];
}

/** The KV key of a project's invocation counter for a month (`YYYY-MM`, UTC). */
export function usageKey(ref: string, month: string): Deno.KvKey {
  return ["usage", "invocations", ref, month];
}

const FLUSH_MS = 1_000;
const REFRESH_MS = 5_000;

interface ProjectUsage {
  month: string;
  stored: number; // last value read from KV
  pending: number; // counted here, not yet added in KV
  limit: number;
  readAt: number;
}

/**
 * InvocationQuota counts invocations per project per month in Deno KV and refuses calls past
 * the plan's `invocations_per_month` with 403 QUOTA_EXCEEDED. Counts are added to KV in batches once per
 * second with atomic sums, so instances sharing KV share the count.
 */
export class InvocationQuota {
  private readonly usage = new Map<string, ProjectUsage>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly kv: Deno.Kv, private readonly defaultLimit: number) {
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
  }

  private async current(ref: string, now: Date): Promise<ProjectUsage> {
    const month = now.toISOString().slice(0, 7);
    let u = this.usage.get(ref);
    if (!u || u.month !== month || Date.now() - u.readAt > REFRESH_MS) {
      const [plan, count] = await this.kv.getMany<[{ invocations_per_month?: number }, Deno.KvU64]>([
        planKey(ref),
        usageKey(ref, month),
      ]);
      const fresh = {
        month,
        stored: Number(count.value?.value ?? 0n),
        pending: u && u.month === month ? u.pending : 0,
        limit: plan.value?.invocations_per_month ?? this.defaultLimit,
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
   * Synchronous while the project's usage is fresh; a promise when it must be read from KV first.
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

  private async add(ref: string, month: string, n: number): Promise<void> {
    await this.kv.atomic().sum(usageKey(ref, month), BigInt(n)).commit();
  }

  /** Adds the pending counts to KV. */
  async flush(): Promise<void> {
    for (const [ref, u] of this.usage) {
      if (u.pending === 0) continue;
      const n = u.pending;
      u.pending = 0;
      try {
        await this.add(ref, u.month, n);
        u.stored += n;
      } catch (err) {
        u.pending += n;
        log.warn("cannot store invocation counts", { project: ref, cause: describeError(err) });
      }
    }
  }

  /** Stops the timer and stores what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
