-- AI session tickets, kept where every instance sees them: a ticket minted through one instance is spent,
-- revoked or expired on all of them. Only the SHA-256 of a ticket is stored.
create table platform.ai_sessions (
  ticket_hash text primary key,
  project_ref text not null references platform.projects (ref) on delete cascade,
  -- Tokens not yet spent nor reserved by a call in flight.
  budget_remaining bigint not null check (budget_remaining >= 0),
  -- Tokens reserved by calls in flight.
  held bigint not null default 0 check (held >= 0),
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index ai_sessions_expires_at on platform.ai_sessions (expires_at);
