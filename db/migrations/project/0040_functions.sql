-- Edge functions and their invocation records. Internal: anon and authenticated
-- cannot read the platform schema.
create table platform.functions (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  runtime text not null check (runtime in ('deno', 'wasm')),
  code text not null,
  code_hash text not null,
  env_vars text not null, -- AES-GCM ciphertext of the JSON object of variables
  permissions jsonb not null,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table platform.function_invocations (
  id bigint generated always as identity primary key,
  function_id uuid not null,
  function_name text not null,
  status integer,
  outcome text not null check (outcome in ('ok', 'error', 'timeout', 'oom', 'crash')),
  duration_ms double precision not null,
  created_at timestamptz not null default now()
);
create index function_invocations_function_time on platform.function_invocations (function_id, created_at);
create index function_invocations_time on platform.function_invocations (created_at);
