-- Supabase-style roles, the auth schema and its helpers, so that RLS policies paste in unchanged.
-- Roles are cluster-wide on PostgreSQL: create each one only if it is missing, and tolerate a concurrent creator.
do $$
declare
  r text;
begin
  foreach r in array array['anon', 'authenticated', 'service_role'] loop
    if not exists (select 1 from pg_roles where rolname = r) then
      begin
        execute format('create role %I nologin noinherit', r);
      exception when duplicate_object or unique_violation then null;
      end;
    end if;
  end loop;
  -- Role changes touch cluster-wide catalogs: make them only when needed, so that databases migrating at the
  -- same time rarely collide (the migrator retries when they do).
  if not (select rolbypassrls from pg_roles where rolname = 'service_role') then
    begin
      alter role service_role bypassrls;
    exception when insufficient_privilege then null;
    end;
  end if;
  -- The platform connects as the project owner and switches role per request (a superuser needs no grant).
  if not (select rolsuper from pg_roles where rolname = current_user) then
    foreach r in array array['anon', 'authenticated', 'service_role'] loop
      if not pg_has_role(current_user, r, 'member') then
        execute format('grant %I to %I', r, current_user);
      end if;
    end loop;
  end if;
end $$;

grant usage on schema public to anon, authenticated, service_role;
alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public grant all on sequences to anon, authenticated, service_role;
alter default privileges in schema public grant all on functions to anon, authenticated, service_role;

create schema if not exists auth;
grant usage on schema auth to anon, authenticated, service_role;

create table auth.users (
  id uuid primary key default gen_random_uuid(),
  email text not null,
  password_hash text not null,
  user_metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email on auth.users (lower(email));

create table auth.sessions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

create table auth.refresh_tokens (
  token_hash text primary key,
  session_id uuid not null references auth.sessions (id) on delete cascade,
  created_at timestamptz not null default now(),
  used_at timestamptz
);
create index refresh_tokens_session on auth.refresh_tokens (session_id);

revoke all on auth.users, auth.sessions, auth.refresh_tokens from public, anon, authenticated;
grant select on auth.users to service_role;

-- Claims of the current request, set by the platform with set_config('request.jwt.claims', …, true).
create or replace function auth.jwt() returns jsonb
language sql stable as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
$$;

create or replace function auth.uid() returns uuid
language sql stable as $$
  select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;

create or replace function auth.role() returns text
language sql stable as $$
  select nullif(auth.jwt() ->> 'role', '')::text
$$;

create or replace function auth.email() returns text
language sql stable as $$
  select nullif(auth.jwt() ->> 'email', '')::text
$$;

grant execute on function auth.jwt(), auth.uid(), auth.role(), auth.email() to anon, authenticated, service_role;
