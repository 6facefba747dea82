-- Alerts watch function and job metrics and fire through the notifications service (docs/alerts.md).
-- Internal: anon and authenticated cannot read the platform schema.
create table platform.alerts (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  metric text not null check (metric in ('invocations', 'errors', 'error_rate', 'timeouts', 'duration_p95_ms',
    'duration_avg_ms', 'jobs_failed', 'jobs_dead', 'dlq_depth')),
  condition text not null check (condition in ('gt', 'gte', 'lt', 'lte', 'eq')),
  threshold double precision not null,
  channel text not null check (channel in ('email', 'sms', 'push', 'webhook')),
  destination text not null,
  function_name text, -- null: the whole project
  window_secs integer not null check (window_secs between 60 and 86400),
  cooldown_secs integer not null check (cooldown_secs >= 0),
  enabled boolean not null default true,
  state text not null default 'ok' check (state in ('ok', 'firing')),
  last_value double precision,
  last_evaluated_at timestamptz,
  last_triggered_at timestamptz,
  -- The evaluator's claim: the last tick (a count of ALERTS_EVAL_SECS periods since the epoch) that took the
  -- alert. A tick takes it only when this is lower, so each tick evaluates it once however many processes run.
  last_tick bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index alerts_enabled on platform.alerts (last_tick) where enabled;

create table platform.alert_events (
  id uuid primary key default gen_random_uuid(),
  alert_id uuid not null references platform.alerts (id) on delete cascade,
  status text not null check (status in ('triggered', 'resolved')),
  value double precision,
  threshold double precision not null,
  notification_id uuid,
  created_at timestamptz not null default now()
);
create index alert_events_alert on platform.alert_events (alert_id, created_at desc, id desc);
create index alert_events_created on platform.alert_events (created_at desc, id desc);
-- Events whose notification a stopped process never queued, found by the next tick.
create index alert_events_unsent on platform.alert_events (created_at) where notification_id is null;

-- Job metrics of a window read only the failures of that window, not the whole table.
create index jobs_failed_updated on platform.jobs (updated_at) where status in ('failed', 'dead');
