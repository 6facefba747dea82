-- realtime.visible_to (0060) plans the check once per change instead of once per group of subscribers: a
-- dynamic EXECUTE parses and plans its text every time, which made one change to 100 users cost ~30 ms on
-- PGlite; a prepared statement run per group costs a third of that. The check is the platform's own text; it
-- reads the changed row, the roles catalogue and the table's policies, so the plan holds for every role (a plan
-- that depends on the role, through a policy reading another table under RLS, is replanned by PostgreSQL when
-- the role changes).
create or replace function realtime.visible_to(roles text[], claims text[], check_sql text, row_json text)
returns boolean[] language plpgsql as $$
declare
  result boolean[] := '{}';
  v boolean;
begin
  -- A prepared statement outlives the transaction that made it: one left by an interrupted call is replaced.
  if exists (select 1 from pg_catalog.pg_prepared_statements where name = 'realtime_visible_check') then
    deallocate realtime_visible_check;
  end if;
  begin
    execute 'prepare realtime_visible_check(text) as ' || check_sql;
  exception when others then
    -- A check that cannot be planned lets nobody see the change.
    return pg_catalog.array_fill(false, array[coalesce(pg_catalog.array_length(roles, 1), 0)]);
  end;
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
  -- Gone already if a policy's function deallocated it (its own groups then saw nothing).
  if exists (select 1 from pg_catalog.pg_prepared_statements where name = 'realtime_visible_check') then
    deallocate realtime_visible_check;
  end if;
  perform pg_catalog.set_config('role', 'none', true);
  perform pg_catalog.set_config('request.jwt.claims', '', true);
  return result;
end $$;

revoke all on function realtime.visible_to(text[], text[], text, text) from public;
