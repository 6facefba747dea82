-- A project's settings of its request roles (PostgREST's impersonated role settings) and its app.settings.*
-- values (PostgREST's app.settings), both set on every data request's transaction; null: none.
alter table platform.project_data_settings
  add column role_settings jsonb, -- {"anon": {"statement_timeout": "3s"}, …}
  add column app_settings jsonb; -- {"name": "value", …}, read as current_setting('app.settings.name')
