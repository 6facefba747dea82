-- Bundles of deno functions that import packages (resolved at deploy, docs/functions.md "Imports"): stored by
-- the SHA-256 of their text, so that every instance serves the same bytes and none resolves again.
create table platform.function_bundles (
  hash text primary key,
  code text not null,
  created_at timestamptz not null default now()
);

alter table platform.functions add column bundle_hash text references platform.function_bundles (hash);
-- Each import as written, with the version it resolved to.
alter table platform.functions add column dependencies jsonb not null default '{}'::jsonb;
