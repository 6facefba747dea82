-- Background jobs and cron. The project database is the state of record;
-- Deno KV only carries delivery. Internal: anon and authenticated cannot read the platform schema.
create table platform.jobs (
  id uuid primary key default gen_random_uuid(),
  function_name text not null,
  payload jsonb,
  status text not null default 'pending'
    check (status in ('pending', 'running', 'completed', 'failed', 'dead')),
  attempts integer not null default 0,
  max_attempts integer not null check (max_attempts between 1 and 25),
  error text,
  -- When the next attempt is due (pending, failed); when the running attempt was due (running).
  scheduled_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The running attempt's lease: its owner token and when it expires (renewed while the attempt runs).
  lease_token uuid,
  lease_until timestamptz,
  -- Set for a job made by a cron tick: one job per (entry, tick), however many processes fire it.
  cron_id uuid,
  cron_tick timestamptz
);
create index jobs_created on platform.jobs (created_at desc);
create index jobs_status_created on platform.jobs (status, created_at desc);
create index jobs_due on platform.jobs (scheduled_at) where status in ('pending', 'failed');
create index jobs_lease on platform.jobs (lease_until) where status = 'running';
create unique index jobs_cron_tick on platform.jobs (cron_id, cron_tick) where cron_id is not null;

create table platform.cron_entries (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  schedule text not null, -- always 6 fields, seconds first, UTC
  function_name text not null,
  payload jsonb,
  is_active boolean not null default true,
  last_run timestamptz,
  next_run timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index cron_entries_due on platform.cron_entries (next_run) where is_active;
