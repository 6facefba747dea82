import type { Databases } from "../../db/databases.ts";
import { Batcher } from "../../lib/batcher.ts";
import { AppError, errors } from "../../lib/errors.ts";
import type { Invoker } from "../functions/invoke.ts";
import { describeError, log } from "../../lib/log.ts";
import { type Claimed, newToken, type Next, type WorkArea, type WorkQueue } from "../../lib/work_queue.ts";
import {
  type AttemptEnd,
  claimDueJobs,
  claimJob,
  claimJobs,
  expireLeases,
  finishJob,
  finishJobs,
  getJob,
  insertJob,
  insertJobs,
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
  queue: WorkQueue;
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
/** Inserts per statement at most, and statements in flight per project (see Batcher). */
const INSERT_BATCH = { max: 500, parallel: 2 };

/** A job claimed for one attempt, with its lease token. */
type ClaimedJob = JobRow & Claimed & { token: string };

/** How an attempt went. */
type JobOutcome = { ok: true } | { ok: false; error: string };

/** The row's end of an attempt, from its outcome and what the engine decided follows. */
function attemptEnd(outcome: JobOutcome, next: Next): AttemptEnd {
  const error = outcome.ok ? "" : outcome.error;
  return next.status === "done"
    ? { status: "completed" }
    : next.status === "dead"
    ? { status: "dead", error }
    : { status: "failed", error, retryInMs: next.retryInMs };
}

/**
 * JobService queues, runs and retries background jobs. The project database holds the state of record; a
 * `job.run` message on the KV queue only says "look at job X": the handler claims the job with a conditional
 * update (`pending|failed → running`, due, with a lease), so a duplicate or stale delivery does nothing and
 * each attempt runs once. A running attempt holds a lease it renews; when its process dies the lease expires
 * and the sweep turns the attempt into a failure that is retried (or dead when none is left).
 */
export class JobService {
  /** The jobs' part of the work queue: the engine in workers/ claims, runs and finishes through it. */
  readonly work: WorkArea<ClaimedJob, JobOutcome>;
  /** Jobs created together share one insert (group commit); if it fails, each alone fails only itself. */
  private readonly inserts = new Batcher<Omit<NewJob, "cron">, JobRow | null>(async (ref, jobs) => {
    const db = await this.options.dbs.project(ref);
    return await insertJobs(db, jobs).catch(() => jobs.map((job) => insertJob(db, job)));
  }, INSERT_BATCH);

  constructor(private readonly options: JobServiceOptions) {
    this.work = this.workArea();
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
    const row = job.cron
      ? await insertJob(await this.options.dbs.project(ref), job)
      : await this.inserts.call(ref, job);
    if (row) await this.enqueueRun(ref, row.id, job.delaySecs * 1000);
    return row;
  }

  /**
   * Puts a `job.run` on the work queue (immediate ones grouped per project, and started at once here when
   * this process runs the workers) and resolves once it is written, or its failure logged: the row is the
   * state of record, so a message lost is found by the sweep.
   */
  async enqueueRun(ref: string, id: string, delayMs: number): Promise<void> {
    await this.options.queue.enqueue("job.run", ref, { id, token: newToken() }, delayMs).catch((err) =>
      log.warn("job message not written; the sweep will pick the job up", {
        project: ref,
        job: id,
        cause: describeError(err),
      })
    );
  }

  private workArea(): WorkArea<ClaimedJob, JobOutcome> {
    return {
      kind: "job.run",
      concurrency: this.options.concurrency,
      leaseSecs: this.options.leaseSecs,
      backoff: () => BACKOFF,
      claim: async (ref, item, lease) => {
        const job = await claimJob(await this.options.dbs.project(ref), item.id, lease);
        return job && { ...job, attempt: job.attempts, maxAttempts: job.max_attempts, token: lease.token };
      },
      claimMany: async (ref, claims, secs) => {
        const db = await this.options.dbs.project(ref);
        const jobs = await claimJobs(db, claims.map((c) => ({ id: c.item.id, token: c.token })), secs);
        return jobs.map((job, i) =>
          job && { ...job, attempt: job.attempts, maxAttempts: job.max_attempts, token: claims[i]!.token }
        );
      },
      claimDue: async (ref, limit, secs) => {
        const jobs = await claimDueJobs(await this.options.dbs.project(ref), limit, secs);
        return jobs.map(({ lease_token, ...job }) => ({
          item: { id: job.id, token: lease_token },
          token: lease_token,
          claimed: { ...job, attempt: job.attempts, maxAttempts: job.max_attempts, token: lease_token },
        }));
      },
      run: (ref, job) => this.run(ref, job),
      finish: async (ref, job, outcome, next) => {
        const end = attemptEnd(outcome, next);
        return await finishJob(await this.options.dbs.project(ref), job.id, job.token, end);
      },
      finishMany: async (ref, ends) => {
        const db = await this.options.dbs.project(ref);
        const list = ends.map(({ claimed, outcome, next }) => ({
          id: claimed.id,
          token: claimed.token,
          end: attemptEnd(outcome, next),
        }));
        // If the batch fails (an error text it cannot store), each alone fails only its own attempt.
        return await finishJobs(db, list).catch(() => list.map((f) => finishJob(db, f.id, f.token, f.end)));
      },
      renew: async (ref, held, secs) =>
        await renewLeases(await this.options.dbs.project(ref), held.map((h) => h.token), secs),
      recover: async (ref, graceSecs) => {
        const db = await this.options.dbs.project(ref);
        const expired = await expireLeases(db);
        const due = await overdueJobs(db, graceSecs, 1000);
        if (this.options.retentionDays > 0) await pruneCompleted(db, this.options.retentionDays, 10_000);
        return [...new Set([...expired, ...due])].map((id) => ({ id, token: newToken() }));
      },
    };
  }

  /** Runs the function once for the job and classifies the result. */
  private async run(ref: string, job: JobRow): Promise<JobOutcome> {
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
      if (result.status >= 200 && result.status < 300) return { ok: true };
      const text = new TextDecoder().decode(result.body.subarray(0, 500));
      error = `Function answered ${result.status}${text ? `: ${text}` : ""}`;
    } catch (err) {
      if (err instanceof AppError) error = `${err.code}: ${err.message}`;
      else {
        log.warn("job attempt failed", { project: ref, job: job.id, cause: describeError(err) });
        error = "INTERNAL_ERROR: the attempt failed inside the platform";
      }
    }
    return { ok: false, error: error.slice(0, ERROR_MAX) };
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
}
