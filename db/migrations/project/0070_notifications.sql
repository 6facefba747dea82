-- Notifications (issue 7): the state of record of every message, its attempts and provider answers, templates,
-- rules, rules-engine events and settings. Internal schema: anon and authenticated cannot read it.
create schema if not exists notifications;
revoke all on schema notifications from public;
revoke all on schema notifications from anon, authenticated;

create table notifications.settings (
  id boolean primary key default true check (id),
  public jsonb not null default '{}',
  secrets text,
  updated_at timestamptz not null default now()
);
insert into notifications.settings (id) values (true);

create table notifications.templates (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  channel text not null check (channel in ('email', 'sms', 'push', 'webhook')),
  subject text,
  body text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table notifications.rules (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  trigger_type text not null,
  condition text not null,
  channel text not null check (channel in ('email', 'sms', 'push', 'webhook')),
  recipient_expr text not null,
  template_id uuid references notifications.templates (id) on delete set null,
  subject text,
  body text,
  delay_secs integer not null default 0,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index rules_trigger on notifications.rules (trigger_type) where enabled;

create table notifications.events (
  id uuid primary key default gen_random_uuid(),
  type text not null,
  data jsonb not null default '{}',
  status text not null check (status in ('received', 'matched', 'ignored', 'failed', 'enqueued')),
  reason text,
  rule_ids uuid[] not null default '{}',
  notification_ids uuid[] not null default '{}',
  received_at timestamptz not null default now(),
  matched_at timestamptz,
  ignored_at timestamptz,
  enqueued_at timestamptz,
  failed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index events_created on notifications.events (created_at desc);

create table notifications.messages (
  id uuid primary key default gen_random_uuid(),
  channel text not null check (channel in ('email', 'sms', 'push', 'webhook')),
  recipient text not null,
  subject text,
  body text,
  event text,
  payload jsonb,
  template_id uuid,
  variables jsonb not null default '{}',
  metadata jsonb not null default '{}',
  idempotency_key text,
  rule_id uuid,
  event_id uuid,
  status text not null check (status in
    ('queued', 'sending', 'sent', 'delivered', 'failed', 'dead_lettered', 'suppressed')),
  attempts integer not null default 0,
  max_attempts integer not null,
  last_error text,
  provider text,
  provider_message_id text,
  -- The token of the one queue message allowed to move this notification; rotated at every (re)enqueue.
  dispatch_id uuid,
  scheduled_at timestamptz not null default now(),
  next_attempt_at timestamptz,
  queued_at timestamptz not null default now(),
  sending_at timestamptz,
  sent_at timestamptz,
  delivered_at timestamptz,
  failed_at timestamptz,
  dead_lettered_at timestamptz,
  suppressed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index messages_idempotency on notifications.messages (idempotency_key)
  where idempotency_key is not null;
create index messages_created on notifications.messages (created_at desc);
create index messages_status on notifications.messages (status, channel);
create index messages_channel_day on notifications.messages (channel, created_at);

create table notifications.attempts (
  id bigint generated always as identity primary key,
  notification_id uuid not null references notifications.messages (id) on delete cascade,
  attempt integer not null,
  channel text not null,
  provider text not null,
  outcome text not null check (outcome in ('success', 'retryable_error', 'permanent_error')),
  http_status integer,
  response text,
  error text,
  retry_after_ms integer,
  duration_ms integer not null,
  started_at timestamptz not null,
  finished_at timestamptz not null default now()
);
create index attempts_notification on notifications.attempts (notification_id, attempt);

create table notifications.provider_logs (
  id bigint generated always as identity primary key,
  notification_id uuid references notifications.messages (id) on delete set null,
  channel text not null,
  provider text not null,
  status text not null check (status in ('success', 'error')),
  request jsonb not null default '{}',
  http_status integer,
  response text,
  duration_ms integer not null,
  created_at timestamptz not null default now()
);
create index provider_logs_created on notifications.provider_logs (created_at desc);
