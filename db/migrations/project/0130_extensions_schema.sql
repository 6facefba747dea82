-- Extensions live in their own schema, as on Supabase: `public` belongs to the project's owner, and the platform's
-- own sessions, which never search `public`, find pgvector's types and operators in `extensions`. The project's
-- sessions search `"$user", public, extensions`.
create schema if not exists extensions;
grant usage on schema extensions to public;
do $$
begin
  if exists (select 1 from pg_catalog.pg_extension e join pg_catalog.pg_namespace n on n.oid = e.extnamespace
              where e.extname = 'vector' and n.nspname = 'public') then
    alter extension vector set schema extensions;
  end if;
  execute pg_catalog.format('alter database %I set search_path = "$user", public, extensions',
    pg_catalog.current_database());
end $$;
