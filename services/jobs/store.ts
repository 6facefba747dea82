import type { Db, Queryable } from "../../db/driver.ts";

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

/**
 * Inserts several pending jobs (none of a cron tick) in one statement: one round trip and one commit for a
 * batch of requests. Rows come back in the order given.
 */
export async function insertJobs(db: Queryable, jobs: Omit<NewJob, "cron">[]): Promise<JobRow[]> {
  const ids = jobs.map(() => crypto.randomUUID());
  const rows = await db.query<JobRow>(
    `insert into platform.jobs (id, function_name, payload, max_attempts, scheduled_at)
     select n.id, n.function_name, n.payload::jsonb, n.max_attempts, now() + make_interval(secs => n.delay_secs)
       from unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::float8[])
         as n(id, function_name, payload, max_attempts, delay_secs)
     returning ${COLUMNS}`,
    [
      ids,
      jobs.map((j) => j.functionName),
      jobs.map((j) => json(j.payload)),
      jobs.map((j) => j.maxAttempts),
      jobs.map((j) => j.delaySecs),
    ],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
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

/**
 * Claims several jobs in one statement, as {@linkcode claimJob} does each, each with its own lease token.
 * Results in the order given; a job asked twice is claimed by one of them only.
 */
export async function claimJobs(
  db: Queryable,
  claims: { id: string; token: string }[],
  secs: number,
): Promise<(JobRow | null)[]> {
  const rows = await db.query<JobRow & { claim_token: string }>(
    `update platform.jobs set status = 'running', attempts = attempts + 1, started_at = now(),
       updated_at = now(), lease_token = c.claim_token, lease_until = now() + make_interval(secs => $3)
     from unnest($1::uuid[], $2::uuid[]) as c(claim_id, claim_token)
     where id = c.claim_id and status in ('pending', 'failed')
       and scheduled_at <= now() + interval '50 milliseconds'
     returning ${COLUMNS}, c.claim_token`,
    [claims.map((c) => c.id), claims.map((c) => c.token), secs],
  );
  const byToken = new Map(rows.map(({ claim_token, ...row }) => [claim_token, row as JobRow]));
  return claims.map((c) => byToken.get(c.token) ?? null);
}

/**
 * Claims up to `limit` due jobs straight from the table, as {@linkcode claimJob} does each, oldest due first,
 * each with a fresh lease token. Rows another session holds locked (being claimed or finished elsewhere) are
 * skipped, not waited for: several instances pull from one table side by side and none takes a job twice.
 */
export async function claimDueJobs(
  db: Queryable,
  limit: number,
  secs: number,
): Promise<(JobRow & { lease_token: string })[]> {
  return await db.query<JobRow & { lease_token: string }>(
    `update platform.jobs j set status = 'running', attempts = attempts + 1, started_at = now(),
       updated_at = now(), lease_token = gen_random_uuid(), lease_until = now() + make_interval(secs => $2)
     from (select id as due_id from platform.jobs where status in ('pending', 'failed') and scheduled_at <= now()
           order by scheduled_at limit $1 for update skip locked) due
     where j.id = due.due_id
     returning ${COLUMNS}, lease_token::text as lease_token`,
    [limit, secs],
  );
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

/** Records the ends of several attempts in one statement, as {@linkcode finishJob} does each (in order). */
export async function finishJobs(
  db: Queryable,
  ends: { id: string; token: string; end: AttemptEnd }[],
): Promise<boolean[]> {
  const rows = await db.query<{ end_token: string }>(
    `update platform.jobs set status = f.end_status, updated_at = now(), lease_token = null, lease_until = null,
       completed_at = case when f.end_status = 'completed' then now() else completed_at end,
       error = f.end_error,
       scheduled_at = case when f.end_status = 'failed' then now() + make_interval(secs => f.end_secs)
         else scheduled_at end
     from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::float8[])
       as f(end_id, end_token, end_status, end_error, end_secs)
     where id = f.end_id and status = 'running' and lease_token = f.end_token
     returning f.end_token`,
    [
      ends.map((e) => e.id),
      ends.map((e) => e.token),
      ends.map((e) => e.end.status),
      ends.map((e) => e.end.status === "completed" ? null : e.end.error),
      ends.map((e) => e.end.status === "failed" ? e.end.retryInMs / 1000 : 0),
    ],
  );
  const recorded = new Set(rows.map((r) => r.end_token));
  return ends.map((e) => recorded.has(e.token));
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

// Cron entries

/** A cron entry row. */
export interface CronRow {
  id: string;
  name: string;
  schedule: string;
  function_name: string;
  payload: unknown;
  is_active: boolean;
  last_run: Date | null;
  next_run: Date | null;
  created_at: Date;
}

const CRON_COLUMNS = "id, name, schedule, function_name, payload, is_active, last_run, next_run, created_at";

/** What POST /v1/functions/cron writes. */
export interface CronWrite {
  name: string;
  schedule: string;
  functionName: string;
  payload: unknown;
  isActive: boolean;
  nextRun: Date | null;
}

/** Creates the entry or updates the one of that name (`created` tells which). */
export async function upsertCron(db: Queryable, w: CronWrite): Promise<{ row: CronRow; created: boolean }> {
  const [row] = await db.query<CronRow & { created: boolean }>(
    `insert into platform.cron_entries (name, schedule, function_name, payload, is_active, next_run)
     values ($1, $2, $3, $4::text::jsonb, $5, $6)
     on conflict (name) do update set schedule = excluded.schedule, function_name = excluded.function_name,
       payload = excluded.payload, is_active = excluded.is_active, next_run = excluded.next_run,
       updated_at = now()
     returning ${CRON_COLUMNS}, (xmax = 0) as created`,
    [
      w.name,
      w.schedule,
      w.functionName,
      w.payload === undefined || w.payload === null ? null : JSON.stringify(w.payload),
      w.isActive,
      w.nextRun,
    ],
  );
  const { created, ...entry } = row!;
  return { row: entry, created };
}

/** Every entry by name. */
export async function listCron(db: Queryable): Promise<CronRow[]> {
  return await db.query<CronRow>(`select ${CRON_COLUMNS} from platform.cron_entries order by name`);
}

/** Deletes an entry; false when there is none of that name. */
export async function deleteCron(db: Queryable, name: string): Promise<boolean> {
  return (await db.query(`delete from platform.cron_entries where name = $1 returning id`, [name])).length >
    0;
}

/** A due entry, with its `next_run` exactly as stored (microseconds included) for the claim. */
export interface DueCron extends CronRow {
  tick: string;
}

/** Active entries whose next run is due. */
export async function dueCron(db: Queryable, limit: number): Promise<DueCron[]> {
  return await db.query<DueCron>(
    `select ${CRON_COLUMNS}, next_run::text as tick from platform.cron_entries where is_active and next_run <= now()
     order by next_run limit $1`,
    [limit],
  );
}

/**
 * Claims one tick of an entry: moves `next_run` from the tick to `next` only if it still is the tick (an atomic
 * compare-and-set, so one process wins however many fire it). Null when another process already took it, or
 * the entry was changed, deactivated or deleted meanwhile. `tick` is the stored text: passed as text, not as
 * a timestamp parameter (postgres.js would round it through a JS Date and drop the microseconds).
 */
export async function claimTick(
  db: Queryable,
  id: string,
  tick: string,
  next: Date | null,
): Promise<CronRow | null> {
  const [row] = await db.query<CronRow>(
    `update platform.cron_entries set next_run = $3, last_run = now()
     where id = $1 and is_active and next_run = $2::text::timestamptz
     returning ${CRON_COLUMNS}`,
    [id, tick, next],
  );
  return row ?? null;
}

/**
 * Fires one tick of an entry: claims it ({@linkcode claimTick}) and inserts its job in one transaction, under
 * the unique (entry, tick) key. Null when another process took the tick (or its job exists already).
 */
export async function fireCronTick(
  db: Db,
  entry: DueCron,
  next: Date | null,
  job: Omit<NewJob, "cron">,
): Promise<JobRow | null> {
  return await db.transaction(async (tx) => {
    if (!await claimTick(tx, entry.id, entry.tick, next)) return null;
    return await insertJob(tx, { ...job, cron: { id: entry.id, tick: entry.tick } });
  });
}

/** Job counts of one window of {@linkcode jobWindows}, `k` being its 1-based position in the list asked for. */
export interface JobWindowRow {
  k: number;
  jobs_failed: number;
  jobs_dead: number;
  dlq_depth: number;
}

/**
 * For each window (seconds, optionally one function's jobs): the jobs whose last attempt failed within it
 * (`failed` or `dead` since), those that went `dead` within it, and the dead jobs now (the DLQ's depth).
 */
export async function jobWindows(
  db: Queryable,
  wanted: { functionName: string | null; secs: number }[],
): Promise<JobWindowRow[]> {
  return await db.query<JobWindowRow>(
    `with w as (select fn, secs, k from unnest($1::text[], $2::int[]) with ordinality as w(fn, secs, k))
     select w.k::int as k,
       (select count(*) from platform.jobs j where j.status in ('failed', 'dead')
          and j.updated_at > now() - make_interval(secs => w.secs)
          and (w.fn is null or j.function_name = w.fn))::float8 as jobs_failed,
       (select count(*) from platform.jobs j where j.status in ('failed', 'dead') and j.status = 'dead'
          and j.updated_at > now() - make_interval(secs => w.secs)
          and (w.fn is null or j.function_name = w.fn))::float8 as jobs_dead,
       (select count(*) from platform.jobs j where j.status = 'dead'
          and (w.fn is null or j.function_name = w.fn))::float8 as dlq_depth
     from w`,
    [wanted.map((w) => w.functionName), wanted.map((w) => w.secs)],
  );
}
