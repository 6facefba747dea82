-- Realtime Authorization, as Supabase has it: a private channel (`config: {private: true}` in supabase-js) is
-- authorized by the RLS policies the project owner writes on `realtime.messages`. When a client joins a private
-- topic, the platform evaluates, as the client's role with its JWT claims and `realtime.topic()` set to the
-- topic, the SELECT policies (may it receive) and the INSERT policies (may it send) on a row of extension
-- 'broadcast' and on one of extension 'presence'; nothing is written for that. The table also keeps the
-- broadcasts a client asks to store (`persist`, private channels only) until `expires_at`, for a later join's
-- `replay`.
create table if not exists realtime.messages (
  id uuid not null default gen_random_uuid() primary key,
  topic text not null,
  extension text not null,
  payload jsonb,
  event text,
  private boolean default false,
  updated_at timestamp not null default now(),
  inserted_at timestamp not null default now(),
  expires_at timestamptz
);
create index if not exists messages_replay on realtime.messages (topic, inserted_at);
create index if not exists messages_expires_at on realtime.messages (expires_at);
alter table realtime.messages enable row level security;
revoke all on realtime.messages from public;

-- The subscriber roles evaluate the policies themselves: they name the table and `realtime.topic()`, and need
-- the privileges a policy check asks for. Every other object of the schema stays closed to them (no grant to
-- public on any of its tables or functions).
grant usage on schema realtime to anon, authenticated, service_role;
grant select, insert on realtime.messages to anon, authenticated, service_role;
-- The capture trigger's function kept PostgreSQL's default EXECUTE for public; the owner, who puts the trigger on
-- its tables, holds its own grant (and a trigger's function is not checked for EXECUTE when it fires).
revoke all on function realtime.capture() from public;

-- The topic being joined (without `realtime:`), for policies: `using (realtime.topic() = 'room:' || auth.uid())`.
create or replace function realtime.topic() returns text
language sql stable set search_path = pg_catalog, pg_temp as $$
  select nullif(pg_catalog.current_setting('realtime.topic', true), '')
$$;
revoke all on function realtime.topic() from public;
grant execute on function realtime.topic() to anon, authenticated, service_role;

-- The project owner owns realtime.messages, so that its own SQL can write the policies and read what is stored
-- (and nothing else of the schema); the rest is as before.
create or replace function platform.setup_owner(owner text) returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  execute format('alter schema public owner to %I', owner);
  execute format('grant create on database %I to %I', current_database(), owner);
  execute format('grant usage on schema auth to %I', owner);
  execute format('grant select, references on auth.users to %I', owner);
  execute format('grant execute on function auth.jwt(), auth.uid(), auth.role(), auth.email() to %I', owner);
  execute format('grant usage on schema realtime to %I', owner);
  execute format('grant execute on function realtime.enable(text), realtime.disable(text) to %I', owner);
  execute format('grant execute on function realtime.register(regclass), realtime.capture(), realtime.primary_key(regclass) to %I', owner);
  execute format('grant execute on function realtime.topic() to %I', owner);
  execute format('alter table realtime.messages owner to %I', owner);
  execute format('alter default privileges for role %I in schema public grant all on tables to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on sequences to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on functions to anon, authenticated, service_role', owner);
end $$;
revoke all on function platform.setup_owner(text) from public;
