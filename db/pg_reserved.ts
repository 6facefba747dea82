import type postgres from "postgres";

/** The SQLSTATEs of a server ending the session (admin_shutdown, crash_shutdown, cannot_connect_now). */
const SESSION_ENDED = new Set(["57P01", "57P02", "57P03"]);

/**
 * True when `err` is the server ending the session (57P01…): what the session ran then did not commit. postgres.js
 * also gives that error, kept from the ended session, to the first query it queues while connecting again
 * (before sending it): after a server restart, each pooled connection's next query or reservation fails so once.
 */
export function sessionEnded(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && SESSION_ENDED.has(code);
}

/**
 * True when `err` says a connection that was open closed under a query (as opposed to one that could not
 * connect): postgres.js may keep that connection's last state for what it connects for next.
 */
export function mayLeaveState(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "CONNECTION_CLOSED" || sessionEnded(err);
}

/**
 * True when `err`, a query's failure, means its connection is gone: postgres.js's own (`CONNECTION_CLOSED`…),
 * the socket's (`ECONNRESET`, `EPIPE`…), or the server ending the session (a restart, pg_terminate_backend).
 */
export function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" &&
    (code.startsWith("CONNECTION_") || SESSION_ENDED.has(code) || /^E[A-Z]+$/.test(code));
}

/** What postgres.js hands a query's `onexecute`: the connection it runs on (its own `begin()` uses this). */
interface PoolConnection {
  onclose?: ((err: unknown) => void) | null;
  /** Closes the socket; the queries on it fail (CONNECTION_DESTROYED). The pool connects it again on demand. */
  terminate(): void;
}

/** What postgres.js sets on a query it has handed to a connection: the connection's backend. */
interface SentQuery {
  state?: { pid: number | null } | null;
}

/**
 * A connection reserved from a postgres.js pool, watched for its loss. When a reserved connection closes,
 * postgres.js already puts it back among the pool's closed ones; handing it back again (`release`) would list it as
 * open with no socket, and the next query given to it would throw outside any promise (an uncaught TypeError,
 * which ends the process) and never settle. So once the connection is lost, nothing more is sent on it and it
 * is not released.
 */
export class ReservedConnection {
  lost = false;
  private dropped = false;
  private connection: PoolConnection | null = null;

  private constructor(readonly sql: postgres.ReservedSql, private readonly onLost: () => void) {}

  /** Reserves a connection of `pool`; `onLost` hears when it is lost other than by `drop()`. */
  static async reserve(pool: postgres.Sql, onLost: () => void): Promise<ReservedConnection> {
    return new ReservedConnection(await pool.reserve(), onLost);
  }

  /**
   * Sends `text` (a transaction's BEGIN) as the connection's first query: postgres.js hands its `onexecute` the
   * connection, whose `onclose` it calls when the socket closes.
   */
  begin(text: string): postgres.PendingQuery<postgres.Row[]> {
    this.first = this.sql.unsafe(text, [], this.watch);
    return this.first.execute();
  }

  /** The backend the connection talks to, once its first query was handed to it. */
  get pid(): number | undefined {
    return (this.first as unknown as SentQuery | undefined)?.state?.pid ?? undefined;
  }

  /**
   * Ends the session from this side first: the socket closes and the queries on it fail at once, and the server's
   * last words (a FATAL when `terminate` ends the backend next) never reach the connection, which postgres.js
   * would otherwise give to the first query it sends once connected again.
   */
  drop(): void {
    this.lost = this.dropped = true;
    this.connection?.terminate();
  }

  private first: postgres.PendingQuery<postgres.Row[]> | undefined;

  /** True from onexecute: keep pipelining what follows. */
  private readonly watch = {
    onexecute: (connection: PoolConnection) => {
      this.connection = connection;
      connection.onclose = () => {
        this.lost = true;
        if (!this.dropped) this.onLost();
      };
      return true;
    },
  } as unknown as postgres.UnsafeQueryOptions;

  /** Notes a query's failure: one that says the connection is gone marks it lost. */
  note(err: unknown): void {
    if (!connectionLost(err) || this.lost) return;
    this.lost = true;
    if (!this.dropped && mayLeaveState(err)) this.onLost();
  }

  /** The error a query gets instead of being sent on a lost connection. */
  static lostError(): Error {
    return Object.assign(new Error("the database connection was lost"), { code: "CONNECTION_CLOSED" });
  }

  /** Hands the connection back to the pool, unless it was lost (the pool has it already). */
  release(): void {
    if (this.connection) this.connection.onclose = null;
    if (!this.lost) this.sql.release();
  }
}
