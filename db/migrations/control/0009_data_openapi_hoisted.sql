-- A project's OpenAPI root settings (PostgREST's openapi-mode, openapi-security-active) and the function
-- settings hoisted to a call's transaction (PostgREST's db-hoisted-tx-settings); null: the platform's default.
alter table platform.project_data_settings
  add column openapi_mode text, -- 'follow-privileges', 'ignore-privileges' or 'disabled'
  add column openapi_security_active boolean,
  add column hoisted_tx_settings jsonb; -- ["statement_timeout", …]
