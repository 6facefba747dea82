import type { Databases } from "../../db/databases.ts";
import { percentile } from "../functions/duration_histogram.ts";
import type { InvocationRecorder } from "../functions/invocations.ts";
import { invocationStore, type WantedWindow } from "../functions/store.ts";
import { jobWindows } from "../jobs/store.ts";

/** The metrics an alert can watch (docs/alerts.md). */
export const METRICS = [
  "invocations",
  "errors",
  "error_rate",
  "timeouts",
  "duration_p95_ms",
  "duration_avg_ms",
  "jobs_failed",
  "jobs_dead",
  "dlq_depth",
] as const;

/** A metric name. */
export type Metric = typeof METRICS[number];

/** Every metric's value over one window; the durations are null when there was no call. */
export type Metrics = Record<Metric, number | null>;

const JOB_METRICS: ReadonlySet<Metric> = new Set(["jobs_failed", "jobs_dead", "dlq_depth"]);

/** Whether a metric is read from the job store rather than the invocation rollups. */
export const isJobMetric = (metric: Metric): boolean => JOB_METRICS.has(metric);

const round = (v: number | null) => (v === null ? null : Math.round(v * 100) / 100);

/**
 * MetricsReader computes metrics over sliding windows from the per-minute invocation rollups (the minutes that
 * overlap the window, the open one included, with what this process still holds in memory written first) and
 * from the job store. Many windows are read with one query each for rollups and jobs, never a scan of calls.
 */
export class MetricsReader {
  constructor(
    private readonly dbs: Pick<Databases, "project">,
    private readonly recorder: InvocationRecorder,
  ) {}

  /**
   * The metrics of each wanted window, in order; a window without `histogram` reads no p95 (null), and
   * `jobs: false` skips the job store (its metrics read 0).
   */
  async read(ref: string, wanted: WantedWindow[], options: { jobs: boolean }): Promise<Metrics[]> {
    if (wanted.length === 0) return [];
    await this.recorder.flush(ref);
    const db = await this.dbs.project(ref);
    const [calls, jobs] = await Promise.all([
      invocationStore.windows(db, wanted),
      options.jobs ? jobWindows(db, wanted) : Promise.resolve([]),
    ]);
    const out: Metrics[] = wanted.map(() => ({
      invocations: 0,
      errors: 0,
      error_rate: 0,
      timeouts: 0,
      duration_p95_ms: null,
      duration_avg_ms: null,
      jobs_failed: 0,
      jobs_dead: 0,
      dlq_depth: 0,
    }));
    for (const row of calls) {
      const m = out[Number(row.k) - 1]!;
      const count = Number(row.count ?? 0);
      if (count <= 0) continue;
      const hist = (row.hist ?? []).map(Number);
      m.invocations = count;
      m.errors = Number(row.errors ?? 0);
      m.error_rate = m.errors / count;
      m.timeouts = Number(row.timeouts ?? 0);
      m.duration_p95_ms = row.hist
        ? round(percentile(hist, count, 0.95, Number(row.min_ms), Number(row.max_ms)))
        : null;
      m.duration_avg_ms = round(Number(row.sum_ms) / count);
    }
    for (const row of jobs) {
      const m = out[Number(row.k) - 1]!;
      m.jobs_failed = Number(row.jobs_failed);
      m.jobs_dead = Number(row.jobs_dead);
      m.dlq_depth = Number(row.dlq_depth);
    }
    return out;
  }
}
