-- Least privilege for everything tenant SQL can reach.
--
-- Realtime's capture trigger runs on tenant tables and calls tenant-definable code (`to_jsonb` of a row applies
-- casts and output functions the owner may have written). It must not carry a superuser's rights, so the objects
-- that act with their definer's rights belong to `platform_realtime`: no login, no superuser, owner of realtime's
-- two tables and nothing else. Turning capture on or off runs with the caller's own rights (only a table's owner
-- can put a trigger on it) and records the table through `realtime.register`, which trusts only the catalog.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'platform_realtime') then
    begin
      create role platform_realtime nologin noinherit;
    exception when duplicate_object or unique_violation then null;
    end;
  end if;
end $$;

grant usage on schema realtime to platform_realtime;
alter table realtime.tables owner to platform_realtime;
alter table realtime.overflow owner to platform_realtime;

alter function realtime.publish(text, text) owner to platform_realtime;
alter function realtime.publish(text, text) set search_path = pg_catalog, pg_temp;
alter function realtime.capture() owner to platform_realtime;
alter function realtime.capture() set search_path = pg_catalog, pg_temp;

-- The primary key columns of a table, in key order (null without one).
create or replace function realtime.primary_key(rel regclass) returns text[]
language sql stable set search_path = pg_catalog, pg_temp as $$
  select pg_catalog.array_agg(a.attname::text order by pg_catalog.array_position(i.indkey::int2[], a.attnum))
    from pg_catalog.pg_index i
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum operator(pg_catalog.=) any (i.indkey::int2[])
   where i.indrelid = rel and i.indisprimary
$$;
alter function realtime.primary_key(regclass) owner to platform_realtime;
revoke all on function realtime.primary_key(regclass) from public;

-- Records a captured table once its trigger exists; forgets it once the trigger is gone. The argument is only a
-- name to look up: what is recorded comes from the catalog (a trigger can only be put there by the table's owner).
create or replace function realtime.register(rel regclass) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  nsp text;
  tbl text;
  pk text[];
begin
  select n.nspname, c.relname into nsp, tbl
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.oid = rel;
  if exists (
    select 1 from pg_catalog.pg_trigger t
     where t.tgrelid = rel and t.tgname = 'realtime_capture'
       and t.tgfoid = 'realtime.capture()'::pg_catalog.regprocedure
  ) then
    if nsp in ('auth', 'platform', 'realtime', 'pg_catalog', 'information_schema') then
      raise exception 'realtime.enable: schema % is internal', nsp using errcode = '42501';
    end if;
    pk := realtime.primary_key(rel);
    insert into realtime.tables (schema_name, table_name, primary_key) values (nsp, tbl, pk)
      on conflict (schema_name, table_name) do update set primary_key = excluded.primary_key;
  else
    delete from realtime.tables where schema_name = nsp and table_name = tbl;
  end if;
end $$;
alter function realtime.register(regclass) owner to platform_realtime;
revoke all on function realtime.register(regclass) from public;

-- Starts capturing a table: `select realtime.enable('public.messages')`. The table needs a primary key.
create or replace function realtime.enable(target text) returns void
language plpgsql security invoker set search_path = pg_catalog, pg_temp as $$
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
  pk := realtime.primary_key(rel);
  if pk is null then
    raise exception 'realtime.enable: table %.% has no primary key', nsp, tbl using errcode = '42P10';
  end if;
  execute pg_catalog.format('drop trigger if exists realtime_capture on %I.%I', nsp, tbl);
  execute pg_catalog.format(
    'create trigger realtime_capture after insert or update or delete on %I.%I '
    'for each row execute function realtime.capture(%s)',
    nsp, tbl, (select pg_catalog.string_agg(pg_catalog.quote_literal(c), ', ') from pg_catalog.unnest(pk) c)
  );
  perform realtime.register(rel);
end $$;

-- Stops capturing a table: `select realtime.disable('public.messages')`.
create or replace function realtime.disable(target text) returns void
language plpgsql security invoker set search_path = pg_catalog, pg_temp as $$
declare
  rel regclass := target::regclass;
  nsp text;
  tbl text;
begin
  select n.nspname, c.relname into nsp, tbl
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.oid = rel;
  execute pg_catalog.format('drop trigger if exists realtime_capture on %I.%I', nsp, tbl);
  perform realtime.register(rel);
end $$;

-- The owner puts the capture trigger on its tables itself, so it may name the trigger function (which cannot be
-- called directly: it is a trigger function).
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
  execute format('alter default privileges for role %I in schema public grant all on tables to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on sequences to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on functions to anon, authenticated, service_role', owner);
end $$;
revoke all on function platform.setup_owner(text) from public;

-- The login that tenant traffic runs on (PostgreSQL: one per project database, with no rights of its own) may
-- run realtime's visibility check, which switches to each subscriber's role itself.
create or replace function platform.setup_authenticator(login text) returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  execute format('grant usage on schema realtime to %I', login);
  execute format('grant execute on function realtime.visible_to(text[], text[], text, text) to %I', login);
end $$;
revoke all on function platform.setup_authenticator(text) from public;

-- The event trigger's function runs as whoever ran the DDL; it resolves nothing through their search_path.
alter function platform.notify_schema_change() set search_path = pg_catalog, pg_temp;

-- realtime.visible_to now runs on the tenant login, which may not name the objects a policy uses (it has no rights
-- of its own). The check is therefore prepared as the first subscriber role that can name them; PostgreSQL checks
-- schema usage only when it parses, and the rights that matter (the table's SELECT, EXECUTE of the functions a
-- policy calls, the tables it reads) again when each group's role runs the plan, as it does for a policy itself.
-- It keeps the caller's search_path: the policies' text names objects relative to it (pg_get_expr).
create or replace function realtime.visible_to(roles text[], claims text[], check_sql text, row_json text)
returns boolean[] language plpgsql as $$
declare
  result boolean[] := '{}';
  v boolean;
  prepared boolean := false;
  r text;
begin
  if exists (select 1 from pg_catalog.pg_prepared_statements where name = 'realtime_visible_check') then
    deallocate realtime_visible_check;
  end if;
  foreach r in array (select pg_catalog.array_agg(distinct x) from pg_catalog.unnest(roles) x) loop
    perform pg_catalog.set_config('role', r, true);
    begin
      execute 'prepare realtime_visible_check(text) as ' || check_sql;
      prepared := true;
    exception when others then
      null;
    end;
    exit when prepared;
  end loop;
  perform pg_catalog.set_config('role', 'none', true);
  if not prepared then
    -- A check that cannot be planned lets nobody see the change.
    return pg_catalog.array_fill(false, array[coalesce(pg_catalog.array_length(roles, 1), 0)]);
  end if;
  for i in 1 .. coalesce(pg_catalog.array_length(roles, 1), 0) loop
    perform pg_catalog.set_config('role', roles[i], true);
    perform pg_catalog.set_config('request.jwt.claims', claims[i], true);
    begin
      execute pg_catalog.format('execute realtime_visible_check(%L)', row_json) into v;
    exception when others then
      v := false;
    end;
    result := result || coalesce(v, false);
  end loop;
  perform pg_catalog.set_config('role', 'none', true);
  perform pg_catalog.set_config('request.jwt.claims', '', true);
  -- Gone already if a policy's function deallocated it (its own groups then saw nothing).
  if exists (select 1 from pg_catalog.pg_prepared_statements where name = 'realtime_visible_check') then
    deallocate realtime_visible_check;
  end if;
  return result;
end $$;
revoke all on function realtime.visible_to(text[], text[], text, text) from public;
