-- A project's auth URL settings (POST /auth/v1/recover links): `site_url` is where a link lands by default,
-- `redirect_urls` the glob patterns a link may land on instead. A null column takes the platform's default.
create table platform.project_auth_settings (
  project_ref text primary key references platform.projects (ref) on delete cascade,
  site_url text,
  redirect_urls jsonb,
  updated_at timestamptz not null default now()
);
