/** The SQLSTATEs of a server ending the session (admin_shutdown, crash_shutdown, cannot_connect_now). */
export const SESSION_ENDED = new Set(["57P01", "57P02", "57P03"]);

/**
 * True when `err`, a query's failure, means its connection is gone: postgres.js's own (`CONNECTION_CLOSED`…),
 * the socket's (`ECONNRESET`, `EPIPE`…), or the server ending the session (a restart, pg_terminate_backend).
 * What ran on it did not commit unless it said so; the pool connects again for the next query.
 */
export function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" &&
    (code.startsWith("CONNECTION_") || SESSION_ENDED.has(code) || /^E[A-Z]+$/.test(code));
}
