-- Password recovery (POST /auth/v1/recover, /verify): the latest recovery of each user, hashed. `code_hash` is
-- the one-time code the mail shows (SHA-256 of the user id and the code), `link_hash` the SHA-256 of the mail's
-- `token_hash`; both are spent together, `attempts` counts wrong codes (services/auth/recovery.ts).
create table auth.recovery_tokens (
  user_id uuid primary key references auth.users (id) on delete cascade,
  code_hash text not null,
  link_hash text not null unique,
  attempts integer not null default 0,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);

revoke all on auth.recovery_tokens from public, anon, authenticated;
