-- The project owner: the role that `POST /v1/sql` and the owner's own migrations run as. It owns the `public`
-- schema and what it creates there, may read `auth.users` (to reference it) and enable realtime capture, and is
-- neither a superuser nor able to touch the platform's internal schemas.
create or replace function platform.setup_owner(owner text) returns void
language plpgsql set search_path = '' as $$
begin
  execute format('alter schema public owner to %I', owner);
  execute format('grant create on database %I to %I', current_database(), owner);
  execute format('grant usage on schema auth to %I', owner);
  execute format('grant select, references on auth.users to %I', owner);
  execute format('grant execute on function auth.jwt(), auth.uid(), auth.role(), auth.email() to %I', owner);
  execute format('grant usage on schema realtime to %I', owner);
  execute format('grant execute on function realtime.enable(text), realtime.disable(text) to %I', owner);
  execute format('alter default privileges for role %I in schema public grant all on tables to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on sequences to anon, authenticated, service_role', owner);
  execute format('alter default privileges for role %I in schema public grant all on functions to anon, authenticated, service_role', owner);
end $$;
revoke all on function platform.setup_owner(text) from public;

-- Capture is switched on and off by the owner, who may not write realtime's own tables: the two functions act
-- with their definer's rights and check their argument themselves (no internal schema, a real table).
alter function realtime.enable(text) security definer;
alter function realtime.disable(text) security definer;
