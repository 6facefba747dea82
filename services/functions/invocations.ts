import type { Databases } from "../../db/databases.ts";
import type { Outcome } from "../../runtime/protocol.ts";
import { describeError, log } from "../../lib/log.ts";
import { percentile } from "./duration_histogram.ts";
import { Rollup } from "./rollup.ts";
import { invocationStore } from "./store.ts";

/** One finished invocation. */
export interface InvocationRecord {
  functionId: string;
  functionName: string;
  status: number | null;
  outcome: Outcome;
  durationMs: number;
  /** When it ended (ms since the epoch). */
  at: number;
}

/** The summary of GET /v1/functions/{name}/stats. */
export interface InvocationStats {
  window: string;
  count: number;
  errors: number;
  timeouts: number;
  oom: number;
  p50_ms: number | null;
  p95_ms: number | null;
  avg_ms: number | null;
}

/** Windows accepted by the stats route. */
export const STATS_WINDOWS = { "1h": "1 hour", "24h": "24 hours", "7d": "7 days", "30d": "30 days" } as const;

/** Options of {@linkcode InvocationRecorder}. */
export interface RecorderOptions {
  /** Rollups held in memory (pending or being written) across projects; a call needing one more is dropped. */
  maxRollups?: number;
}

const FLUSH_MS = 1_000;
const MINUTE_MS = 60_000;
// About 1 KB each: 50,000 rollups are ~50 MB, e.g. 35 days of one busy function or 3.5 days of ten, when a
// project database stays unreachable.
const MAX_ROLLUPS = 50_000;
const DROP_WARNING_MS = 60_000;
const RETENTION_EVERY_MS = 10 * MINUTE_MS;

/** The rollups of one function waiting to be written, by minute. */
interface FunctionPending {
  minutes: Map<number, Rollup>;
  last: Rollup | null;
}

/**
 * InvocationRecorder counts invocations in memory, per project, function and UTC minute (count, failures, calls
 * per HTTP status class, sum, minimum and maximum of the durations, duration histogram), and once a second
 * upserts each project's minutes into its `platform.function_invocation_rollups` with one statement: recording
 * a call costs a few additions.
 */
export class InvocationRecorder {
  private readonly pending = new Map<string, Map<string, FunctionPending>>();
  private readonly writing = new Map<string, Promise<void>>();
  private readonly prunedAt = new Map<string, number>();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly maxRollups: number;
  private held = 0; // rollups pending or being written, against maxRollups
  private dropped = 0;
  private droppedWarnedAt = 0;

  constructor(private readonly dbs: Pick<Databases, "project">, options: RecorderOptions = {}) {
    this.maxRollups = options.maxRollups ?? MAX_ROLLUPS;
    this.timer = setInterval(() => this.flushAll(), FLUSH_MS);
  }

  /** Counts a call of project `ref`. */
  record(ref: string, rec: InvocationRecord): void {
    let fns = this.pending.get(ref);
    if (!fns) this.pending.set(ref, fns = new Map());
    let fn = fns.get(rec.functionId);
    if (!fn) fns.set(rec.functionId, fn = { minutes: new Map(), last: null });
    const minute = Math.floor(rec.at / MINUTE_MS);
    let rollup = fn.last;
    if (rollup === null || rollup.minute !== minute) {
      rollup = fn.minutes.get(minute) ?? null;
      if (rollup === null) {
        if (this.held >= this.maxRollups) {
          this.dropped++;
          return;
        }
        rollup = new Rollup(rec.functionId, rec.functionName, minute);
        fn.minutes.set(minute, rollup);
        this.held++;
      }
      fn.last = rollup;
    }
    rollup.add(rec.outcome, rec.durationMs, rec.status);
  }

  private warnDropped(): void {
    if (this.dropped === 0 || Date.now() - this.droppedWarnedAt < DROP_WARNING_MS) return;
    log.warn("invocations not counted: too many minutes of invocation rollups wait to be written", {
      dropped: this.dropped,
      maxRollups: this.maxRollups,
    });
    this.dropped = 0;
    this.droppedWarnedAt = Date.now();
  }

  /** Takes the pending rollups of a project; functions with nothing pending since the last take are forgotten. */
  private take(ref: string): Rollup[] {
    const fns = this.pending.get(ref);
    if (!fns) return [];
    const taken: Rollup[] = [];
    for (const [id, fn] of fns) {
      if (fn.minutes.size === 0) {
        fns.delete(id);
        continue;
      }
      for (const rollup of fn.minutes.values()) taken.push(rollup);
      fn.minutes.clear();
      fn.last = null;
    }
    if (fns.size === 0) this.pending.delete(ref);
    return taken;
  }

  /** Puts back rollups whose write failed, merged with what was counted meanwhile. */
  private putBack(ref: string, rollups: Rollup[]): void {
    let fns = this.pending.get(ref);
    if (!fns) this.pending.set(ref, fns = new Map());
    for (const rollup of rollups) {
      let fn = fns.get(rollup.functionId);
      if (!fn) fns.set(rollup.functionId, fn = { minutes: new Map(), last: null });
      const current = fn.minutes.get(rollup.minute);
      if (current) {
        current.merge(rollup);
        this.held--;
      } else {
        fn.minutes.set(rollup.minute, rollup);
      }
    }
  }

  /** Writes the pending rollups of one project; after a failure they wait for the next flush. */
  flush(ref: string): Promise<void> {
    // One write per project at a time, so that a failed write is put back before the next one takes.
    const previous = this.writing.get(ref) ?? Promise.resolve();
    const next = previous.then(() => this.write(ref));
    this.writing.set(ref, next);
    next.finally(() => {
      if (this.writing.get(ref) === next) this.writing.delete(ref);
    });
    return next;
  }

  private async write(ref: string): Promise<void> {
    const rollups = this.take(ref);
    if (rollups.length === 0) return;
    try {
      const db = await this.dbs.project(ref);
      await invocationStore.upsert(db, rollups);
      this.held -= rollups.length;
    } catch (err) {
      this.putBack(ref, rollups);
      log.warn("cannot write invocation rollups; kept for the next flush", {
        project: ref,
        rollups: rollups.length,
        cause: describeError(err),
      });
      return;
    }
    await this.prune(ref);
  }

  /** Deletes the project's rollups past the retention, at most every ten minutes. */
  private async prune(ref: string): Promise<void> {
    const now = Date.now();
    if (now - (this.prunedAt.get(ref) ?? 0) < RETENTION_EVERY_MS) return;
    this.prunedAt.set(ref, now);
    try {
      await invocationStore.prune(await this.dbs.project(ref));
    } catch (err) {
      log.warn("cannot delete old invocation rollups", { project: ref, cause: describeError(err) });
    }
  }

  /** Writes every project's pending rollups, and waits for the writes under way. */
  async flushAll(): Promise<void> {
    this.warnDropped();
    const refs = new Set([...this.pending.keys(), ...this.writing.keys()]);
    await Promise.all([...refs].map((ref) => this.flush(ref)));
  }

  /**
   * Count, failures and duration percentiles of a function over the minutes that start within the window
   * (minute granularity); what is counted in memory is written first.
   */
  async stats(ref: string, functionId: string, window: keyof typeof STATS_WINDOWS): Promise<InvocationStats> {
    await this.flush(ref);
    const db = await this.dbs.project(ref);
    const row = await invocationStore.stats(db, functionId, STATS_WINDOWS[window]);
    const count = Number(row?.count ?? 0);
    const hist = (row?.hist ?? []).map(Number);
    const min = Number(row?.min_ms);
    const max = Number(row?.max_ms);
    const round = (v: number | null) => v === null ? null : Math.round(v * 100) / 100;
    return {
      window,
      count,
      errors: Number(row?.errors ?? 0),
      timeouts: Number(row?.timeouts ?? 0),
      oom: Number(row?.oom ?? 0),
      p50_ms: round(percentile(hist, count, 0.5, min, max)),
      p95_ms: round(percentile(hist, count, 0.95, min, max)),
      avg_ms: round(count > 0 ? Number(row?.sum_ms) / count : null),
    };
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushAll();
  }
}
