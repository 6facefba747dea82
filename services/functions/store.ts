// Rows are JSON text cast in SQL (`$n::text::jsonb`) so that both drivers store the same value.
import type { Queryable } from "../../db/driver.ts";
import type { Rollup } from "./rollup.ts";

/** A row of `platform.functions` (env_vars still encrypted). */
export interface FunctionRow {
  id: string;
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  env_vars: string;
  permissions: { allow_net: string[]; memory_mb: number; timeout_secs: number };
  is_active: boolean;
  /** The SHA-256 of the function's bundle, when it imports packages; null when its code runs as is. */
  bundle_hash: string | null;
  /** Each import as written, with the version it resolved to. */
  dependencies: Record<string, string>;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS =
  "id, name, runtime, code, code_hash, env_vars, permissions, is_active, bundle_hash, dependencies, created_at, updated_at";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The fields written by a deploy or an update. */
export interface FunctionWrite {
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  env_vars: string;
  permissions: FunctionRow["permissions"];
  is_active: boolean;
  bundle_hash: string | null;
  dependencies: Record<string, string>;
}

/** The SQL of `platform.functions` in a project database. */
export const functionStore = {
  /** Every function, by name. */
  async list(db: Queryable): Promise<FunctionRow[]> {
    return await db.query<FunctionRow>(`select ${COLUMNS} from platform.functions order by name`);
  },

  /** The function named `ref`, or else the one whose id is `ref`. `lock` takes a row lock. */
  async find(db: Queryable, ref: string, lock = false): Promise<FunctionRow | null> {
    if (ref.includes("\u0000")) return null; // PostgreSQL text cannot hold a NUL: no function has one
    const forUpdate = lock ? " for update" : "";
    const [byName] = await db.query<FunctionRow>(
      `select ${COLUMNS} from platform.functions where name = $1${forUpdate}`,
      [ref],
    );
    if (byName || !UUID.test(ref)) return byName ?? null;
    const [byId] = await db.query<FunctionRow>(
      `select ${COLUMNS} from platform.functions where id = $1${forUpdate}`,
      [ref],
    );
    return byId ?? null;
  },

  /** Inserts a function; null when the name was taken meanwhile. */
  async insert(db: Queryable, f: FunctionWrite): Promise<FunctionRow | null> {
    const [row] = await db.query<FunctionRow>(
      `insert into platform.functions
         (name, runtime, code, code_hash, env_vars, permissions, is_active, bundle_hash, dependencies)
       values ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9::text::jsonb)
       on conflict (name) do nothing returning ${COLUMNS}`,
      [
        f.name,
        f.runtime,
        f.code,
        f.code_hash,
        f.env_vars,
        JSON.stringify(f.permissions),
        f.is_active,
        f.bundle_hash,
        JSON.stringify(f.dependencies),
      ],
    );
    return row ?? null;
  },

  /** Replaces every field of the function `id`. */
  async update(db: Queryable, id: string, f: FunctionWrite): Promise<FunctionRow> {
    const [row] = await db.query<FunctionRow>(
      `update platform.functions set name = $2, runtime = $3, code = $4, code_hash = $5, env_vars = $6,
         permissions = $7::text::jsonb, is_active = $8, bundle_hash = $9, dependencies = $10::text::jsonb,
         updated_at = now()
       where id = $1 returning ${COLUMNS}`,
      [
        id,
        f.name,
        f.runtime,
        f.code,
        f.code_hash,
        f.env_vars,
        JSON.stringify(f.permissions),
        f.is_active,
        f.bundle_hash,
        JSON.stringify(f.dependencies),
      ],
    );
    return row!;
  },

  /** Deletes the function `id`. */
  async delete(db: Queryable, id: string): Promise<void> {
    await db.query("delete from platform.functions where id = $1", [id]);
    await this.dropUnusedBundles(db);
  },

  /** Stores a bundle under its hash (kept when already there). */
  async putBundle(db: Queryable, hash: string, code: string): Promise<void> {
    await db.query(
      "insert into platform.function_bundles (hash, code) values ($1, $2) on conflict (hash) do nothing",
      [hash, code],
    );
  },

  /** The bundle stored under `hash`, or null. */
  async bundle(db: Queryable, hash: string): Promise<string | null> {
    const [row] = await db.query<{ code: string }>(
      "select code from platform.function_bundles where hash = $1",
      [hash],
    );
    return row?.code ?? null;
  },

  /** Deletes the bundles no function uses any more. */
  async dropUnusedBundles(db: Queryable): Promise<void> {
    await db.query(
      `delete from platform.function_bundles b
       where not exists (select 1 from platform.functions f where f.bundle_hash = b.hash)`,
    );
  },
};

/** Sums of a window of rollups (numbers may arrive as text). */
export type StatsRow = Record<string, string | number | null> & { hist: (string | number)[] | null };

// Adds each minute to the stored one: counts and sums add up, histograms add slot by slot (the shorter one is
// padded with zeros: stored histograms end at their last non-empty slot).
const UPSERT = `
  insert into platform.function_invocation_rollups as r
    (function_id, function_name, bucket, count, errors, timeouts, oom, sum_ms, min_ms, max_ms, hist,
     status_1xx, status_2xx, status_3xx, status_4xx, status_5xx)
  select f, n, b, c, e, t, o, s, lo, hi, h::int[], s1, s2, s3, s4, s5
  from unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int8[], $5::int8[], $6::int8[], $7::int8[],
              $8::float8[], $9::float8[], $10::float8[], $11::text[],
              $12::int8[], $13::int8[], $14::int8[], $15::int8[], $16::int8[])
    as u(f, n, b, c, e, t, o, s, lo, hi, h, s1, s2, s3, s4, s5)
  on conflict (function_id, bucket) do update set
    function_name = excluded.function_name,
    count = r.count + excluded.count,
    errors = r.errors + excluded.errors,
    timeouts = r.timeouts + excluded.timeouts,
    oom = r.oom + excluded.oom,
    status_1xx = r.status_1xx + excluded.status_1xx,
    status_2xx = r.status_2xx + excluded.status_2xx,
    status_3xx = r.status_3xx + excluded.status_3xx,
    status_4xx = r.status_4xx + excluded.status_4xx,
    status_5xx = r.status_5xx + excluded.status_5xx,
    sum_ms = r.sum_ms + excluded.sum_ms,
    min_ms = least(r.min_ms, excluded.min_ms),
    max_ms = greatest(r.max_ms, excluded.max_ms),
    hist = array(select coalesce(x, 0) + coalesce(y, 0)
                 from unnest(r.hist, excluded.hist) with ordinality as m(x, y, i) order by i)`;

// Sums of the window's minutes, and their histograms added slot by slot.
const STATS = `
  with minutes as (
    select * from platform.function_invocation_rollups where function_id = $1 and bucket > now() - $2::interval
  )
  select (select sum(count) from minutes)::float8 as count,
         (select sum(errors) from minutes)::float8 as errors,
         (select sum(timeouts) from minutes)::float8 as timeouts,
         (select sum(oom) from minutes)::float8 as oom,
         (select sum(sum_ms) from minutes) as sum_ms,
         (select min(min_ms) from minutes) as min_ms,
         (select max(max_ms) from minutes) as max_ms,
         (select array_agg(n order by i)
          from (select i, sum(v)::float8 as n from minutes, unnest(hist) with ordinality as h(v, i) group by i) s
         ) as hist`;

// Sums of the minutes that overlap each wanted window (a function's by its current id, so a deleted function
// reads 0; or the whole project's), and, where asked (adding them up costs the most), their histograms added
// slot by slot. Reads rollups only.
const WINDOWS = `
  with w as (
    select fn, secs, hist, k from unnest($1::text[], $2::int[], $3::text[]::bool[]) with ordinality as w(fn, secs, hist, k)
  ),
  minutes as (
    select w.k, w.hist as wants_hist, r.count, greatest(r.errors, r.status_5xx) as errors, r.timeouts, r.sum_ms, r.min_ms, r.max_ms, r.hist
    from w join platform.functions f on f.name = w.fn
    join platform.function_invocation_rollups r
      on r.function_id = f.id and r.bucket > now() - make_interval(secs => w.secs + 60)
    union all
    select w.k, w.hist as wants_hist, r.count, greatest(r.errors, r.status_5xx) as errors, r.timeouts, r.sum_ms, r.min_ms, r.max_ms, r.hist
    from (select * from w where fn is null) w
    join platform.function_invocation_rollups r on r.bucket > now() - make_interval(secs => w.secs + 60)
  ),
  sums as (
    select k, sum(count)::float8 as count, sum(errors)::float8 as errors, sum(timeouts)::float8 as timeouts,
           sum(sum_ms) as sum_ms, min(min_ms) as min_ms, max(max_ms) as max_ms
    from minutes group by k
  ),
  hists as (
    select k, array_agg(n order by i) as hist
    from (select k, i, sum(v)::float8 as n from minutes, unnest(hist) with ordinality as h(v, i)
          where wants_hist group by k, i) s
    group by k
  )
  select s.k::int as k, s.count, s.errors, s.timeouts, s.sum_ms, s.min_ms, s.max_ms, h.hist
  from sums s left join hists h on h.k = s.k`;

/** A window wanted from {@linkcode invocationStore.windows}: one function's (by name) or the project's. */
export interface WantedWindow {
  functionName: string | null;
  secs: number;
  /** Add up the duration histograms too (for percentiles). */
  histogram: boolean;
}

const MINUTE_MS = 60_000;
// How long rollups are kept.
const RETENTION = "30 days";

/** The SQL of `platform.function_invocation_rollups` in a project database. */
export const invocationStore = {
  /** Adds each rollup to the stored one of its function and minute. */
  async upsert(db: Queryable, rollups: Rollup[]): Promise<void> {
    await db.query(UPSERT, [
      rollups.map((r) => r.functionId),
      rollups.map((r) => r.functionName),
      rollups.map((r) => new Date(r.minute * MINUTE_MS).toISOString()),
      rollups.map((r) => r.count),
      rollups.map((r) => r.errors),
      rollups.map((r) => r.timeouts),
      rollups.map((r) => r.oom),
      rollups.map((r) => r.sumMs),
      rollups.map((r) => r.minMs),
      rollups.map((r) => r.maxMs),
      rollups.map((r) => r.histLiteral()),
      rollups.map((r) => r.status1xx),
      rollups.map((r) => r.status2xx),
      rollups.map((r) => r.status3xx),
      rollups.map((r) => r.status4xx),
      rollups.map((r) => r.status5xx),
    ]);
  },

  /** Deletes the rollups past the retention. */
  async prune(db: Queryable): Promise<void> {
    await db.query(
      `delete from platform.function_invocation_rollups where bucket < now() - interval '${RETENTION}'`,
    );
  },

  /**
   * The sums of each wanted window over the minutes that overlap it (the current, open minute included), as
   * rows whose `k` is the 1-based position in `wanted`; a window without calls has no row.
   */
  async windows(db: Queryable, wanted: WantedWindow[]): Promise<(StatsRow & { k: number })[]> {
    return await db.query<StatsRow & { k: number }>(WINDOWS, [
      wanted.map((w) => w.functionName),
      wanted.map((w) => w.secs),
      // As text: postgres.js cannot send an array of booleans.
      wanted.map((w) => String(w.histogram)),
    ]);
  },

  /** The sums of a function's minutes within `interval` (an SQL interval such as "1 hour"). */
  async stats(db: Queryable, functionId: string, interval: string): Promise<StatsRow | null> {
    const [row] = await db.query<StatsRow>(STATS, [functionId, interval]);
    return row ?? null;
  },
};

/** A console line of a function, as written to `platform.function_logs`. */
export interface LogLine {
  functionId: string;
  timestamp: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
}

// Inserts the lines of functions that still exist (a line of a function deleted meanwhile is dropped), in order.
const INSERT_LOGS = `
  insert into platform.function_logs (function_id, at, level, message)
  select u.f, u.t, u.l, u.m
  from unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[]) with ordinality as u(f, t, l, m, i)
  join platform.functions fn on fn.id = u.f
  order by u.i`;
const KEEP_NEWEST_LOGS = `
  delete from platform.function_logs l using (
    select id from (
      select id, row_number() over (partition by function_id order by at desc, id desc) as n
      from platform.function_logs where function_id = any($1::uuid[])
    ) ranked where n > $2
  ) old
  where l.id = old.id`;
const READ_LOGS = `
  select at, level, message from platform.function_logs
  where function_id = $1 and ($3::text is null or level = $3)
  order by at desc, id desc limit $2`;

/** The SQL of `platform.function_logs` in a project database. */
export const logStore = {
  /** Appends lines, one statement for them all. */
  async insert(db: Queryable, lines: LogLine[]): Promise<void> {
    await db.query(INSERT_LOGS, [
      lines.map((l) => l.functionId),
      lines.map((l) => l.timestamp),
      lines.map((l) => l.level),
      lines.map((l) => l.message),
    ]);
  },

  /** Deletes all but the newest `keep` lines of each of `functionIds`. */
  async keepNewest(db: Queryable, functionIds: string[], keep: number): Promise<void> {
    await db.query(KEEP_NEWEST_LOGS, [functionIds, keep]);
  },

  /** The newest `limit` lines of a function, newest first, optionally of one level. */
  async read(
    db: Queryable,
    functionId: string,
    limit: number,
    level: LogLine["level"] | null,
  ): Promise<{ at: Date | string; level: LogLine["level"]; message: string }[]> {
    return await db.query(READ_LOGS, [functionId, limit, level]);
  },
};

/** The SQL of a project's plan and monthly invocation counts in the control database. */
export const usageStore = {
  /** The project's monthly quota (null: the default) and its count for `month` (`YYYY-MM`). */
  async read(
    control: Queryable,
    ref: string,
    month: string,
  ): Promise<{ plan: number | null; count: number }> {
    const [row] = await control.query<{ plan: string | number | null; count: string | number | null }>(
      `select (select invocations_per_month from platform.project_plans where project_ref = $1) as plan,
              (select count from platform.invocation_usage where project_ref = $1 and month = $2) as count`,
      [ref, month],
    );
    return {
      plan: row?.plan === null || row?.plan === undefined ? null : Number(row.plan),
      count: Number(row?.count ?? 0),
    };
  },

  /** Adds `n` to the count of a month and returns the new total of every instance. */
  async add(control: Queryable, ref: string, month: string, n: number): Promise<number> {
    const [row] = await control.query<{ count: string | number }>(
      `insert into platform.invocation_usage as u (project_ref, month, count) values ($1, $2, $3)
       on conflict (project_ref, month) do update set count = u.count + excluded.count
       returning count`,
      [ref, month, n],
    );
    return Number(row!.count);
  },

  /** Sets (or, with null, removes) the monthly invocation quota of project `ref`. */
  async setPlan(control: Queryable, ref: string, invocationsPerMonth: number | null): Promise<void> {
    await control.query(
      `insert into platform.project_plans (project_ref, invocations_per_month) values ($1, $2)
       on conflict (project_ref) do update set invocations_per_month = excluded.invocations_per_month,
         updated_at = now()`,
      [ref, invocationsPerMonth],
    );
  },
};
