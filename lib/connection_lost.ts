/** The SQLSTATEs of a server ending the session (admin_shutdown, crash_shutdown, cannot_connect_now). */
export const SESSION_ENDED = new Set(["57P01", "57P02", "57P03"]);

/** The socket errors of a connection that broke or could not be made. */
const SOCKET_ERRORS = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTCONN",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * True when the database server sent `err` (it carries a severity, as postgres.js's and PGlite's errors do):
 * its code is a SQLSTATE, whatever it looks like (`RAISE SQLSTATE 'EPIPE'` is a tenant's own code).
 */
export function fromServer(err: unknown): boolean {
  return typeof (err as { severity?: unknown } | null)?.severity === "string";
}

/**
 * True when `err`, a query's failure, means its connection is gone: the server ending the session (a restart,
 * pg_terminate_backend), postgres.js's own connection errors (`CONNECTION_CLOSED`…, `CONNECT_TIMEOUT`), or the
 * socket's (`ECONNRESET`, `EPIPE`…). What ran on it did not commit unless it said so; the pool connects again.
 */
export function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  if (fromServer(err)) return SESSION_ENDED.has(code);
  return code.startsWith("CONNECTION_") || code === "CONNECT_TIMEOUT" || SOCKET_ERRORS.has(code);
}
