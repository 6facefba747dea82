-- Invocation limits kept where every instance sees them: instances sharing only PostgreSQL share the counts.

-- A project's plan; no row (or a null column) takes the platform's default (PLAN_INVOCATIONS_PER_MONTH).
create table platform.project_plans (
  project_ref text primary key references platform.projects (ref) on delete cascade,
  invocations_per_month bigint check (invocations_per_month >= 0),
  updated_at timestamptz not null default now()
);

-- Invocations per project per UTC month (`YYYY-MM`), added in batches by each instance.
create table platform.invocation_usage (
  project_ref text not null,
  month text not null,
  count bigint not null,
  primary key (project_ref, month)
);

-- Calls per client per function per UTC minute (the invoke rate limit), added in batches by each instance.
-- Unlogged: a crash loses at most the current minute's counts, and no write waits on the WAL.
create unlogged table platform.invoke_rate_windows (
  key text not null,
  window_start timestamptz not null,
  count bigint not null,
  primary key (key, window_start)
);
create index invoke_rate_windows_start on platform.invoke_rate_windows (window_start);
