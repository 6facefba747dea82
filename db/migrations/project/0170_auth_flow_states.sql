-- PKCE for recovery links (services/auth/pkce.ts). A recovery asked for with a code challenge keeps it
-- (always as S256 of the verifier: a plain challenge is hashed on arrival); its link then ends in an auth code,
-- exchanged once, within minutes, with the verifier for a session. Only hashes of auth codes are stored.
alter table auth.recovery_tokens add column code_challenge text;

create table auth.flow_states (
  auth_code_hash text primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  code_challenge text not null,
  authentication_method text not null default 'recovery',
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index flow_states_user on auth.flow_states (user_id);

revoke all on auth.flow_states from public, anon, authenticated;
