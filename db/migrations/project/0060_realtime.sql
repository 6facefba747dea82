-- Realtime change data capture: `select realtime.enable('public.<table>')` installs a row trigger
-- that publishes every INSERT, UPDATE and DELETE with pg_notify on the channel `realtime`. A payload above the
-- NOTIFY size limit is kept in realtime.overflow and the notification carries only its id. Works the same on
-- PostgreSQL and PGlite. The schema is internal: anon and authenticated cannot read it.
create schema if not exists realtime;
revoke all on schema realtime from public;

-- Tables captured for realtime, with their primary key columns (a DELETE carries only these).
create table if not exists realtime.tables (
  schema_name text not null,
  table_name text not null,
  primary_key text[] not null,
  enabled_at timestamptz not null default now(),
  primary key (schema_name, table_name)
);

-- Payloads too large for NOTIFY; every instance reads them by id, the relay deletes them after a minute.
create table if not exists realtime.overflow (
  id bigint generated always as identity primary key,
  payload text not null,
  created_at timestamptz not null default now()
);
create index if not exists overflow_created_at on realtime.overflow (created_at);

revoke all on all tables in schema realtime from public;

-- Publishes a JSON text on a channel, through realtime.overflow when it is over the NOTIFY limit (8000 bytes).
create or replace function realtime.publish(channel text, payload text) returns void
language plpgsql security definer set search_path = '' as $$
declare
  ref bigint;
begin
  if octet_length(payload) <= 7900 then
    perform pg_notify(channel, payload);
  else
    insert into realtime.overflow (payload) values (payload) returning id into ref;
    perform pg_notify(channel, json_build_object('overflow', ref)::text);
  end if;
end $$;

-- The row trigger: one notification per changed row, delivered when the transaction commits.
create or replace function realtime.capture() returns trigger
language plpgsql security definer set search_path = '' as $$
declare
  payload text;
begin
  payload := json_build_object(
    'schema', TG_TABLE_SCHEMA,
    'table', TG_TABLE_NAME,
    'type', TG_OP,
    'commit_timestamp', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'record', case when TG_OP = 'DELETE' then null else to_jsonb(NEW) end,
    'old_record', case when TG_OP = 'INSERT' then null else to_jsonb(OLD) end,
    'primary_key', to_jsonb(TG_ARGV)
  )::text;
  perform realtime.publish('realtime', payload);
  return null;
end $$;

-- Starts capturing a table: `select realtime.enable('public.messages')`. The table needs a primary key.
create or replace function realtime.enable(target text) returns void
language plpgsql set search_path = '' as $$
declare
  rel regclass := target::regclass;
  nsp text;
  tbl text;
  pk text[];
begin
  select n.nspname, c.relname into nsp, tbl
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.oid = rel and c.relkind in ('r', 'p');
  if tbl is null then
    raise exception 'realtime.enable: % is not a table', target using errcode = '42809';
  end if;
  if nsp in ('auth', 'platform', 'realtime', 'pg_catalog', 'information_schema') then
    raise exception 'realtime.enable: schema % is internal', nsp using errcode = '42501';
  end if;
  select array_agg(a.attname::text order by array_position(i.indkey::int2[], a.attnum))
    into pk
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey::int2[])
   where i.indrelid = rel and i.indisprimary;
  if pk is null then
    raise exception 'realtime.enable: table %.% has no primary key', nsp, tbl using errcode = '42P10';
  end if;
  execute format('drop trigger if exists realtime_capture on %I.%I', nsp, tbl);
  execute format(
    'create trigger realtime_capture after insert or update or delete on %I.%I '
    'for each row execute function realtime.capture(%s)',
    nsp, tbl, (select string_agg(quote_literal(c), ', ') from unnest(pk) c)
  );
  insert into realtime.tables (schema_name, table_name, primary_key) values (nsp, tbl, pk)
    on conflict (schema_name, table_name) do update set primary_key = excluded.primary_key;
end $$;

-- Stops capturing a table: `select realtime.disable('public.messages')`.
create or replace function realtime.disable(target text) returns void
language plpgsql set search_path = '' as $$
declare
  rel regclass := target::regclass;
  nsp text;
  tbl text;
begin
  select n.nspname, c.relname into nsp, tbl
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.oid = rel;
  execute format('drop trigger if exists realtime_capture on %I.%I', nsp, tbl);
  delete from realtime.tables where schema_name = nsp and table_name = tbl;
end $$;

revoke all on function realtime.publish(text, text), realtime.enable(text), realtime.disable(text)
  from public;

-- The RLS check of one change for every group of subscribers, in one statement: for each (role, claims) pair it
-- switches role and claims (transaction-local) and runs the platform's check query, which evaluates the table's
-- SELECT privilege and read policies on the changed row. A check that fails counts as not visible. Called by the
-- platform as the owner only; it runs what the caller passes, so nobody else may execute it.
create or replace function realtime.visible_to(roles text[], claims text[], check_sql text, row_json text)
returns boolean[] language plpgsql as $$
declare
  result boolean[] := '{}';
  v boolean;
begin
  for i in 1 .. coalesce(pg_catalog.array_length(roles, 1), 0) loop
    perform pg_catalog.set_config('role', roles[i], true);
    perform pg_catalog.set_config('request.jwt.claims', claims[i], true);
    begin
      execute check_sql into v using row_json;
    exception when others then
      v := false;
    end;
    result := result || coalesce(v, false);
  end loop;
  perform pg_catalog.set_config('role', 'none', true);
  perform pg_catalog.set_config('request.jwt.claims', '', true);
  return result;
end $$;

revoke all on function realtime.visible_to(text[], text[], text, text) from public;
