-- The control database: projects, their keys and the platform's admins.
create table platform.projects (
  ref text primary key,
  name text not null,
  jwt_kid text not null,
  jwt_private_key text not null, -- PKCS#8, encrypted with the platform secret
  jwt_public_jwk jsonb not null,
  created_at timestamptz not null default now()
);

create table platform.api_keys (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null references platform.projects (ref) on delete cascade,
  kind text not null check (kind in ('public', 'secret')),
  key_hash text not null unique, -- SHA-256 of the key: how a request's key is looked up
  key_encrypted text not null, -- so that the console can show it
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_project on platform.api_keys (project_ref) where revoked_at is null;

create table platform.admins (
  id uuid primary key default gen_random_uuid(),
  email text not null unique,
  password_hash text not null,
  created_at timestamptz not null default now()
);

create table platform.admin_sessions (
  token_hash text primary key,
  admin_id uuid not null references platform.admins (id) on delete cascade,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
