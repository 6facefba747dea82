-- The data API caches each project's schema; DDL tells it to reload with NOTIFY platform_schema.
create or replace function platform.notify_schema_change() returns event_trigger
language plpgsql as $$
begin
  perform pg_notify('platform_schema', 'reload');
end $$;

do $$
begin
  if not exists (select 1 from pg_event_trigger where evtname = 'platform_schema_change') then
    create event trigger platform_schema_change on ddl_command_end
      execute function platform.notify_schema_change();
  end if;
exception when insufficient_privilege then
  raise notice 'no event trigger: the data API reloads its schema cache after POST /v1/sql only';
end $$;
