import type postgres from "postgres";
import { connectionLost, SESSION_ENDED } from "../lib/connection_lost.ts";

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
  // 57P03 (cannot connect now) comes before any query: it leaves nothing.
  return code === "CONNECTION_CLOSED" || code === "57P01" || code === "57P02";
}

/** The most times a reservation is asked for while connections of its pool keep closing. */
const MAX_RESERVE_ATTEMPTS = 20;

/** Tells when a connection of a pool closes: give `onclose` as the pool's postgres.js option of that name. */
export class PoolCloses {
  private readonly waiters = new Set<() => void>();

  readonly onclose = (): void => {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  };

  /** Resolves "closed" at the next close, unless cancelled first. */
  next(): { closed: Promise<"closed">; cancel: () => void } {
    let wake!: () => void;
    const closed = new Promise<"closed">((resolve) => wake = () => resolve("closed"));
    this.waiters.add(wake);
    return { closed, cancel: () => this.waiters.delete(wake) };
  }
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
 * which ends the process) and never settle. Queries waiting in the reservation's own queue are dropped unsettled
 * when it closes. So once the connection is lost nothing more is sent on it, nothing waits for its queries
 * (`whenLost`), and it is not released.
 */
export class ReservedConnection {
  lost = false;
  /** Rejects once the connection is lost: every wait on its queries races it. */
  readonly whenLost: Promise<never>;
  private rejectLost!: (err: unknown) => void;
  private dropped = false;
  private connection: PoolConnection | null = null;
  private first: postgres.PendingQuery<postgres.Row[]> | undefined;
  private backendPid: number | undefined;

  private constructor(readonly sql: postgres.ReservedSql, private readonly onLost: () => void) {
    this.whenLost = new Promise<never>((_, reject) => this.rejectLost = reject);
    this.whenLost.catch(() => {});
  }

  /**
   * Reserves a connection of `pool`; `onLost` hears when it is lost other than by `drop()`. postgres.js hands a
   * reservation still waiting to the next connection of the pool that closes, to be connected again, and then
   * drops it: it never settles (issue 1195, 3.4.9). So when a connection of the pool closes (`closes`) while
   * the reservation waits, it is asked for once more, and a late answer to the first goes back to the pool.
   */
  static async reserve(
    pool: postgres.Sql,
    onLost: () => void,
    closes: PoolCloses,
  ): Promise<ReservedConnection> {
    for (let attempt = 1;; attempt++) {
      const pending = pool.reserve();
      if (attempt >= MAX_RESERVE_ATTEMPTS) return new ReservedConnection(await pending, onLost);
      const close = closes.next();
      const first = await Promise.race([pending.then((sql) => ({ sql })), close.closed]).finally(
        close.cancel,
      );
      if (first !== "closed") return new ReservedConnection(first.sql, onLost);
      pending.then((sql) => sql.release(), () => {});
    }
  }

  /**
   * Sends `text` (a transaction's BEGIN) as the connection's first query: postgres.js hands its `onexecute` the
   * connection, whose `onclose` it calls when the socket closes.
   */
  begin(text: string): postgres.PendingQuery<postgres.Row[]> {
    this.first = this.sql.unsafe(text, [], this.watch);
    return this.first.execute();
  }

  /**
   * The backend this reservation's session had when BEGIN was handed over (a number copied then: postgres.js
   * keeps one object per connection and updates it when the connection is opened again, for other work).
   */
  get pid(): number | undefined {
    return this.backendPid;
  }

  /**
   * Ends the session from this side first: the socket closes and the queries on it fail, and the server's last
   * words (a FATAL when the backend is terminated next) never reach the connection, which postgres.js would
   * otherwise give to the first query it sends once connected again. Nothing once the connection is lost: it
   * may already serve other work.
   */
  drop(): void {
    if (this.lost) return;
    const connection = this.connection;
    this.dropped = true;
    this.lose(ReservedConnection.lostError(), false);
    connection?.terminate();
  }

  /** True from onexecute: keep pipelining what follows. */
  private readonly watch = {
    onexecute: (connection: PoolConnection) => {
      this.connection = connection;
      this.backendPid = (this.first as unknown as SentQuery | undefined)?.state?.pid ?? undefined;
      connection.onclose = () => this.lose(ReservedConnection.lostError(), !this.dropped);
      return true;
    },
  } as unknown as postgres.UnsafeQueryOptions;

  /** Notes a query's failure: one that says the connection is gone marks it lost. */
  note(err: unknown): void {
    if (connectionLost(err)) this.lose(err, !this.dropped && mayLeaveState(err));
  }

  private lose(err: unknown, tell: boolean): void {
    if (this.lost) return;
    this.lost = true;
    if (this.connection) this.connection.onclose = null;
    this.connection = null;
    this.rejectLost(err);
    if (tell) this.onLost();
  }

  /** The error a query gets instead of being sent on a lost connection. */
  static lostError(): Error {
    return Object.assign(new Error("the database connection was lost"), { code: "CONNECTION_CLOSED" });
  }

  /** `query` or the connection's loss, whichever comes first. */
  race<T>(query: PromiseLike<T>): Promise<T> {
    return Promise.race([query, this.whenLost]);
  }

  /** Hands the connection back to the pool, unless it was lost (the pool has it already). */
  release(): void {
    if (this.connection) this.connection.onclose = null;
    if (!this.lost) this.sql.release();
  }
}
