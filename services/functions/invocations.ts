import type { Databases } from "../../db/databases.ts";
import type { Outcome } from "../../runtime/protocol.ts";
import { describeError, log } from "../log.ts";

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

const FLUSH_MS = 1_000;
// Records held per project between two writes; beyond it they are counted as dropped (and warned about).
const MAX_BUFFER = 5_000;
const DROP_WARNING_MS = 60_000;
const RETENTION = "30 days";

/**
 * InvocationRecorder writes invocation records to each project's `platform.function_invocations` in batches
 * (one insert per project per second), so that recording costs the invoke path nothing measurable.
 */
export class InvocationRecorder {
  private readonly buffers = new Map<string, InvocationRecord[]>();
  private readonly timer: ReturnType<typeof setInterval>;
  private flushes = 0;
  private dropped = 0;
  private droppedWarnedAt = 0;

  constructor(private readonly dbs: Databases) {
    this.timer = setInterval(() => this.flushAll(), FLUSH_MS);
  }

  /** Queues a record of project `ref`. */
  record(ref: string, rec: InvocationRecord): void {
    let buf = this.buffers.get(ref);
    if (!buf) this.buffers.set(ref, buf = []);
    if (buf.length < MAX_BUFFER) buf.push(rec);
    else this.dropped++;
  }

  private warnDropped(): void {
    if (this.dropped === 0 || Date.now() - this.droppedWarnedAt < DROP_WARNING_MS) return;
    log.warn("invocation records dropped: more calls per second than the recorder keeps", {
      dropped: this.dropped,
      perProjectPerFlush: MAX_BUFFER,
    });
    this.dropped = 0;
    this.droppedWarnedAt = Date.now();
  }

  /** Writes the queued records of one project. */
  async flush(ref: string): Promise<void> {
    const buf = this.buffers.get(ref);
    if (!buf || buf.length === 0) return;
    this.buffers.delete(ref);
    try {
      const db = await this.dbs.project(ref);
      await db.query(
        `insert into platform.function_invocations (function_id, function_name, status, outcome, duration_ms, created_at)
         select * from unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::float8[], $6::timestamptz[])`,
        [
          buf.map((r) => r.functionId),
          buf.map((r) => r.functionName),
          buf.map((r) => r.status),
          buf.map((r) => r.outcome),
          buf.map((r) => r.durationMs),
          buf.map((r) => new Date(r.at).toISOString()),
        ],
      );
      if (++this.flushes % 600 === 0) {
        await db.query(
          `delete from platform.function_invocations where created_at < now() - interval '${RETENTION}'`,
        );
      }
    } catch (err) {
      log.warn("cannot write invocation records", {
        project: ref,
        count: buf.length,
        cause: describeError(err),
      });
    }
  }

  /** Writes every queued record. */
  async flushAll(): Promise<void> {
    this.warnDropped();
    await Promise.all([...this.buffers.keys()].map((ref) => this.flush(ref)));
  }

  /** Count, failures and duration percentiles of a function over a window. */
  async stats(ref: string, functionId: string, window: keyof typeof STATS_WINDOWS): Promise<InvocationStats> {
    await this.flush(ref);
    const db = await this.dbs.project(ref);
    const [row] = await db.query<Record<string, string | number | null>>(
      `select count(*)::int as count,
              (count(*) filter (where outcome <> 'ok'))::int as errors,
              (count(*) filter (where outcome = 'timeout'))::int as timeouts,
              (count(*) filter (where outcome = 'oom'))::int as oom,
              percentile_cont(0.5) within group (order by duration_ms) as p50,
              percentile_cont(0.95) within group (order by duration_ms) as p95,
              avg(duration_ms) as avg
       from platform.function_invocations
       where function_id = $1 and created_at > now() - $2::interval`,
      [functionId, STATS_WINDOWS[window]],
    );
    const num = (v: unknown) => v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100;
    return {
      window,
      count: Number(row?.count ?? 0),
      errors: Number(row?.errors ?? 0),
      timeouts: Number(row?.timeouts ?? 0),
      oom: Number(row?.oom ?? 0),
      p50_ms: num(row?.p50),
      p95_ms: num(row?.p95),
      avg_ms: num(row?.avg),
    };
  }

  /** Stops the timer and writes what is queued. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushAll();
  }
}
