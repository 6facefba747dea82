import type { Queryable } from "../../db/driver.ts";

/** Job statuses (docs/jobs.md). */
export const JOB_STATUSES = ["pending", "running", "completed", "failed", "dead"] as const;

/** A job status. */
export type JobStatus = typeof JOB_STATUSES[number];

/** A job row as stored (the lease columns stay internal). */
export interface JobRow {
  id: string;
  function_name: string;
  payload: unknown;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  error: string | null;
  scheduled_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  created_at: Date;
  cron_id: string | null;
}

const COLUMNS =
  "id, function_name, payload, status, attempts, max_attempts, error, scheduled_at, started_at, completed_at, created_at, cron_id";

/** A job to store. */
export interface NewJob {
  functionName: string;
  payload: unknown;
  maxAttempts: number;
  delaySecs: number;
  /** The cron entry and tick that made it (one job per tick: a second insert returns nothing). */
  cron?: { id: string; tick: string };
}

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

/** Inserts a pending job due after `delaySecs`; null when its cron tick already has a job. */
export async function insertJob(db: Queryable, job: NewJob): Promise<JobRow | null> {
  const [row] = await db.query<JobRow>(
    `insert into platform.jobs (function_name, payload, max_attempts, scheduled_at, cron_id, cron_tick)
     values ($1, $2::text::jsonb, $3, now() + make_interval(secs => $4), $5, $6::text::timestamptz)
     on conflict (cron_id, cron_tick) where cron_id is not null do nothing
     returning ${COLUMNS}`,
    [
      job.functionName,
      json(job.payload),
      job.maxAttempts,
      job.delaySecs,
      job.cron?.id ?? null,
      job.cron?.tick ?? null,
    ],
  );
  return row ?? null;
}

/** One job, or null. */
export async function getJob(db: Queryable, id: string): Promise<JobRow | null> {
  const [row] = await db.query<JobRow>(`select ${COLUMNS} from platform.jobs where id = $1`, [id]);
  return row ?? null;
}

/** Jobs newest first, optionally of one status. */
export async function listJobs(
  db: Queryable,
  options: { status?: JobStatus; limit: number; offset: number },
): Promise<JobRow[]> {
  return await db.query<JobRow>(
    `select ${COLUMNS} from platform.jobs where ($1::text is null or status = $1)
     order by created_at desc, id limit $2 offset $3`,
    [options.status ?? null, options.limit, options.offset],
  );
}

/**
 * Claims a job for one attempt: `pending|failed → running` when it is due, with a fresh lease. Null when the
 * job is not there, not due, already running or finished: a duplicate or stale delivery then does nothing.
 */
export async function claimJob(
  db: Queryable,
  id: string,
  lease: { token: string; secs: number },
): Promise<JobRow | null> {
  const [row] = await db.query<JobRow>(
    `update platform.jobs set status = 'running', attempts = attempts + 1, started_at = now(),
       updated_at = now(), lease_token = $2, lease_until = now() + make_interval(secs => $3)
     where id = $1 and status in ('pending', 'failed') and scheduled_at <= now() + interval '50 milliseconds'
     returning ${COLUMNS}`,
    [id, lease.token, lease.secs],
  );
  return row ?? null;
}

/** How an attempt ended. */
export type AttemptEnd =
  | { status: "completed" }
  | { status: "failed"; error: string; retryInMs: number }
  | { status: "dead"; error: string };

/**
 * Records the end of an attempt (a success clears `error`), only while this attempt still holds the lease;
 * false when it lost it.
 */
export async function finishJob(db: Queryable, id: string, token: string, end: AttemptEnd): Promise<boolean> {
  const rows = await db.query(
    `update platform.jobs set status = $3, updated_at = now(), lease_token = null, lease_until = null,
       completed_at = case when $3 = 'completed' then now() else completed_at end,
       error = $4,
       scheduled_at = case when $3 = 'failed' then now() + make_interval(secs => $5) else scheduled_at end
     where id = $1 and status = 'running' and lease_token = $2
     returning id`,
    [
      id,
      token,
      end.status,
      end.status === "completed" ? null : end.error,
      end.status === "failed" ? end.retryInMs / 1000 : 0,
    ],
  );
  return rows.length > 0;
}

/** Extends the leases of the attempts this process runs. */
export async function renewLeases(db: Queryable, tokens: string[], secs: number): Promise<void> {
  if (tokens.length === 0) return;
  await db.query(
    `update platform.jobs set lease_until = now() + make_interval(secs => $2)
     where status = 'running' and lease_token = any($1::uuid[])`,
    [tokens, secs],
  );
}

/**
 * Puts jobs back to `pending`, due now, with `attempts` reset to 0 and `error` kept. `from`
 * limits the statuses moved; a running job is never moved (its attempt owns it).
 */
export async function resetJobs(
  db: Queryable,
  where: { id?: string; from: JobStatus[] },
): Promise<JobRow[]> {
  return await db.query<JobRow>(
    `update platform.jobs set status = 'pending', attempts = 0, scheduled_at = now(), completed_at = null,
       updated_at = now(), lease_token = null, lease_until = null
     where status = any($1::text[]) and ($2::uuid is null or id = $2)
     returning ${COLUMNS}`,
    [where.from, where.id ?? null],
  );
}

/**
 * Ends attempts whose lease expired (their process died): the attempt counts as failed, the job is due at
 * once, or `dead` when it has no attempts left. Returns the ids that are due again.
 */
export async function expireLeases(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ id: string; status: JobStatus }>(
    `update platform.jobs set
       status = case when attempts >= max_attempts then 'dead' else 'failed' end,
       error = 'Attempt ' || attempts || ' did not finish: the process running it stopped (lease expired)',
       scheduled_at = now(), updated_at = now(), lease_token = null, lease_until = null
     where status = 'running' and lease_until < now()
     returning id, status`,
  );
  return rows.filter((r) => r.status === "failed").map((r) => r.id);
}

/** Jobs due for `graceSecs` or more whose queue message may be lost (at most `limit`, oldest first). */
export async function overdueJobs(db: Queryable, graceSecs: number, limit: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `select id from platform.jobs where status in ('pending', 'failed')
       and scheduled_at <= now() - make_interval(secs => $1)
     order by scheduled_at limit $2`,
    [graceSecs, limit],
  );
  return rows.map((r) => r.id);
}

/** Deletes up to `limit` completed jobs finished more than `days` ago; returns how many. */
export async function pruneCompleted(db: Queryable, days: number, limit: number): Promise<number> {
  const rows = await db.query(
    `delete from platform.jobs where id in (
       select id from platform.jobs where status = 'completed'
         and completed_at < now() - make_interval(days => $1) limit $2)
     returning id`,
    [days, limit],
  );
  return rows.length;
}
