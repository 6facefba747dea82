import type { Databases } from "../../db/databases.ts";
import { enqueue } from "../../workers/queue.ts";
import { AppError, errors } from "../../lib/errors.ts";
import type { Invoker } from "../functions/invoke.ts";
import { describeError, log } from "../../lib/log.ts";
import { backoffMs } from "../../lib/backoff.ts";
import { Semaphore } from "../../lib/semaphore.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import { RunBatcher } from "./batcher.ts";
import {
  type AttemptEnd,
  claimJob,
  expireLeases,
  finishJob,
  getJob,
  insertJob,
  type JobRow,
  type JobStatus,
  listJobs,
  type NewJob,
  overdueJobs,
  pruneCompleted,
  renewLeases,
  resetJobs,
} from "./store.ts";
import { type JobObject, jobView } from "./view.ts";

/** The body of POST /v1/functions/jobs (bounds in docs/jobs.md). */
export interface CreateJobInput {
  function_name: string;
  payload?: unknown;
  delay_secs?: number;
  max_attempts?: number;
}

/** Options of {@linkcode JobService}. */
export interface JobServiceOptions {
  dbs: Databases;
  kv: Deno.Kv;
  invoker: Invoker;
  /** Attempts in flight at most in this process. */
  concurrency: number;
  /** Lease of a running attempt, renewed every third of it while the attempt runs. */
  leaseSecs: number;
  /** Completed jobs are deleted this many days after they finished (0 keeps them). Dead jobs stay. */
  retentionDays: number;
  /** Largest payload in bytes of JSON: what invoke accepts as a body (INVOKE_MAX_BODY_BYTES). */
  maxPayloadBytes: number;
}

const BACKOFF = { baseMs: 1000, capMs: 60 * 60 * 1000 };
const ERROR_MAX = 1000;

/**
 * JobService queues, runs and retries background jobs. The project database holds the state of record; a
 * `job.run` message on the KV queue only says "look at job X": the handler claims the job with a conditional
 * update (`pending|failed → running`, due, with a lease), so a duplicate or stale delivery does nothing and
 * each attempt runs once. A running attempt holds a lease it renews; when its process dies the lease expires
 * and the sweep turns the attempt into a failure that is retried (or dead when none is left).
 */
export class JobService {
  private readonly lane: Semaphore;
  private dispatching = false;
  /** Lease tokens of the attempts running here, by project. */
  private readonly leases = new Map<string, Set<string>>();
  private readonly local = new Set<Promise<void>>();
  /** Jobs this process started at once after creating them: their KV copies are skipped from memory. */
  private readonly handledLocally = new TtlCache<string, true>({ ttlMs: 10 * 60_000, maxEntries: 200_000 });
  private renewTimer: ReturnType<typeof setInterval> | undefined;
  private readonly batcher: RunBatcher;

  constructor(private readonly options: JobServiceOptions) {
    this.lane = new Semaphore(options.concurrency);
    this.batcher = new RunBatcher(options.kv);
  }

  /** Queues a job; it runs after `delay_secs` (or as soon as a slot is free). */
  async create(ref: string, input: CreateJobInput): Promise<JobObject> {
    this.checkPayload(input.payload);
    const row = await this.insert(ref, {
      functionName: input.function_name,
      payload: input.payload,
      maxAttempts: input.max_attempts ?? 3,
      delaySecs: input.delay_secs ?? 0,
    });
    return jobView(ref, row!);
  }

  /** Throws a 400 when a payload is larger than a function may receive as its body. */
  checkPayload(payload: unknown): void {
    if (payload === undefined || payload === null) return;
    const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;
    if (bytes > this.options.maxPayloadBytes) {
      throw errors.validation(
        `payload: ${bytes} bytes of JSON, more than the ${this.options.maxPayloadBytes} a function accepts`,
      );
    }
  }

  /** Stores a job and puts it on the queue; null when its cron tick already has one. */
  async insert(ref: string, job: NewJob): Promise<JobRow | null> {
    const db = await this.options.dbs.project(ref);
    const row = await insertJob(db, job);
    if (row) await this.enqueueRun(ref, row.id, job.delaySecs * 1000);
    return row;
  }

  /**
   * Puts a `job.run` message on the queue (the durable copy; immediate ones grouped per project) and resolves
   * once it is written (or its failure logged). An immediate job also starts here at once, without waiting for the write: the row is
   * the state of record, so if this process died before the write, the sweep at the next start finds it.
   */
  async enqueueRun(ref: string, id: string, delayMs: number): Promise<void> {
    // A KV write that fails is logged, not thrown: the row is already due, and the sweep re-enqueues it.
    const lost = (err: unknown) =>
      log.warn("job message not written; the sweep will pick the job up", {
        project: ref,
        job: id,
        cause: describeError(err),
      });
    if (delayMs > 0) {
      await enqueue(this.options.kv, { kind: "job.run", project: ref, ids: [id] }, {
        delayMs,
        keysIfUndelivered: [["jobs", "undelivered", ref, id, crypto.randomUUID()]],
      }).catch(lost);
      return;
    }
    const written = this.batcher.add(ref, id);
    if (this.dispatching) this.runLocally(ref, id);
    await written.catch(lost);
  }

  /**
   * The local fast path: KV takes tens of milliseconds to hand a message over, so the process that queued an
   * immediate job starts it at once; the KV copy then finds it claimed (or skips it from memory).
   */
  private runLocally(ref: string, id: string): void {
    const key = `${ref}/${id}`;
    this.handledLocally.set(key, true);
    const run = this.attempt(ref, id).then((started) => {
      if (!started) this.handledLocally.delete(key); // stopping: the KV copy or the next process runs it
    }).catch((err) => {
      this.handledLocally.delete(key);
      log.warn("local job attempt failed; the queue will retry", { cause: describeError(err) });
    });
    this.local.add(run);
    run.finally(() => this.local.delete(run));
  }

  /**
   * The handler of `job.run` messages: one attempt per job still due, concurrently. Throwing makes KV deliver
   * the message again; the jobs already done are then skipped by their claim.
   */
  async deliver(message: { project: string; ids: string[] }): Promise<void> {
    const todo = message.ids.filter((id) => {
      const key = `${message.project}/${id}`;
      if (!this.handledLocally.get(key)) return true;
      this.handledLocally.delete(key); // a later message (a retry) for the same job must not be skipped
      return false;
    });
    const results = await Promise.allSettled(todo.map((id) => this.attempt(message.project, id)));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    if (results.some((r) => r.status === "fulfilled" && !r.value)) {
      throw new Error("Job dispatcher is stopping");
    }
  }

  /** One attempt at a job when it is still due; false when not started because dispatching stopped. */
  private async attempt(ref: string, id: string): Promise<boolean> {
    return await this.lane.run(async () => {
      if (!this.dispatching) return false;
      const db = await this.options.dbs.project(ref);
      const token = crypto.randomUUID();
      const job = await claimJob(db, id, { token, secs: this.options.leaseSecs });
      if (!job) return true; // done, running elsewhere, not due, or retried since: nothing to do
      const held = this.leases.get(ref) ?? new Set<string>();
      this.leases.set(ref, held.add(token));
      try {
        const end = await this.run(ref, job);
        const recorded = await finishJob(db, id, token, end);
        if (recorded && end.status === "failed") {
          this.handledLocally.delete(`${ref}/${id}`); // the retry's message must not be skipped
          await this.enqueueRun(ref, id, end.retryInMs);
        }
        if (!recorded) log.warn("job attempt finished after losing its lease", { project: ref, job: id });
      } finally {
        held.delete(token);
      }
      return true;
    });
  }

  /** Runs the function once for the job and classifies the result. */
  private async run(ref: string, job: JobRow): Promise<AttemptEnd> {
    let error: string;
    try {
      const result = await this.options.invoker.invoke(job.function_name, {
        method: "POST",
        path: "/",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(job.payload ?? null), // a job without payload sends the JSON text null
      }, {
        ref,
        requestId: crypto.randomUUID(),
        clientId: "job",
        job: { id: job.id, attempt: job.attempts },
      });
      if (result.status >= 200 && result.status < 300) return { status: "completed" };
      const text = new TextDecoder().decode(result.body.subarray(0, 500));
      error = `Function answered ${result.status}${text ? `: ${text}` : ""}`;
    } catch (err) {
      if (err instanceof AppError) error = `${err.code}: ${err.message}`;
      else {
        log.warn("job attempt failed", { project: ref, job: job.id, cause: describeError(err) });
        error = "INTERNAL_ERROR: the attempt failed inside the platform";
      }
    }
    error = error.slice(0, ERROR_MAX);
    if (job.attempts >= job.max_attempts) return { status: "dead", error };
    return { status: "failed", error, retryInMs: backoffMs(job.attempts, BACKOFF) };
  }

  /** Lists jobs newest first. */
  async list(
    ref: string,
    options: { status?: JobStatus; limit: number; offset: number },
  ): Promise<JobObject[]> {
    const db = await this.options.dbs.project(ref);
    return (await listJobs(db, options)).map((row) => jobView(ref, row));
  }

  /** One job (404 when unknown). */
  async get(ref: string, id: string): Promise<JobObject> {
    const row = await getJob(await this.options.dbs.project(ref), id);
    if (!row) throw errors.notFound(`Job "${id}" does not exist`);
    return jobView(ref, row);
  }

  /** Puts a job back to pending with attempts reset (409 while it runs, 404 when unknown). */
  async retry(ref: string, id: string): Promise<JobObject> {
    const db = await this.options.dbs.project(ref);
    const [row] = await resetJobs(db, { id, from: ["pending", "failed", "dead", "completed"] });
    if (!row) {
      const current = await getJob(db, id);
      if (!current) throw errors.notFound(`Job "${id}" does not exist`);
      throw errors.conflict(`Job "${id}" is running; retry it once the attempt ends`);
    }
    await this.enqueueRun(ref, row.id, 0);
    return jobView(ref, row);
  }

  /** Puts every dead job back to pending; returns how many. */
  async requeueDead(ref: string): Promise<number> {
    const db = await this.options.dbs.project(ref);
    const rows = await resetJobs(db, { from: ["dead"] });
    for (const row of rows) await this.enqueueRun(ref, row.id, 0);
    return rows.length;
  }

  /**
   * Recovers lost work of a project: attempts whose lease expired become failures (retried at once, or dead),
   * and jobs due for `graceSecs` are put on the queue again. Duplicates are harmless: the claim lets one act.
   * Also deletes completed jobs past their retention.
   */
  async sweep(ref: string, graceSecs: number): Promise<number> {
    const db = await this.options.dbs.project(ref);
    const expired = await expireLeases(db);
    const due = await overdueJobs(db, graceSecs, 1000);
    const ids = new Set([...expired, ...due]);
    for (const id of ids) await this.enqueueRun(ref, id, 0);
    if (this.options.retentionDays > 0) await pruneCompleted(db, this.options.retentionDays, 10_000);
    return ids.size;
  }

  /**
   * Turns dispatching on when the dispatcher starts here (and renews the leases of running attempts), off when
   * it stops: attempts not yet started are then left to the queue, and this waits for those in flight.
   */
  async setDispatching(on: boolean): Promise<void> {
    this.dispatching = on;
    if (on && this.renewTimer === undefined) {
      const every = Math.max(200, (this.options.leaseSecs * 1000) / 3);
      this.renewTimer = setInterval(() => void this.renew(), every);
    }
    if (!on) {
      while (this.local.size > 0) await Promise.all([...this.local]);
      while (this.lane.running > 0) await new Promise((r) => setTimeout(r, 20));
      clearInterval(this.renewTimer);
      this.renewTimer = undefined;
    }
  }

  private async renew(): Promise<void> {
    for (const [ref, tokens] of this.leases) {
      if (tokens.size === 0) continue;
      try {
        await renewLeases(await this.options.dbs.project(ref), [...tokens], this.options.leaseSecs);
      } catch (err) {
        log.warn("job lease renewal failed", { project: ref, cause: describeError(err) });
      }
    }
  }
}
