-- A project's data API settings; a null column takes the platform's default (DATA_* variables).
create table platform.project_data_settings (
  project_ref text primary key references platform.projects (ref) on delete cascade,
  schemas jsonb, -- the exposed schemas, the first the default
  aggregates boolean,
  plan boolean,
  server_timing boolean,
  pre_request text, -- a function run before every request (PostgREST's db-pre-request): `fn` or `schema.fn`
  updated_at timestamptz not null default now()
);
