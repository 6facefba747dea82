-- Every process reads the sessions revoked since its last read, every few seconds (services/auth/
-- revoked_sessions.ts): a partial index keeps that read small however many sessions a project has.
create index sessions_revoked_at on auth.sessions (revoked_at) where revoked_at is not null;
