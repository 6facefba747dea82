-- auth.uid() reads the subject the data API set for this transaction (platform.jwt_sub) while
-- request.jwt.claims still holds the claims it was read from (platform.jwt_claims); otherwise, as before, it
-- parses the claims. Row-level policies call it once per row: the settings cost a fraction of the JSON parse.
create or replace function auth.uid() returns uuid
language sql stable as $$
  select nullif(
    case
      when pg_catalog.current_setting('platform.jwt_claims', true) = pg_catalog.current_setting('request.jwt.claims', true)
        then pg_catalog.current_setting('platform.jwt_sub', true)
      else auth.jwt() ->> 'sub'
    end,
    '')::uuid
$$;
