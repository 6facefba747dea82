import postgres from "postgres";
import { log } from "../lib/log.ts";

/**
 * Extra time the client gives a transaction past its `statement_timeout` before it steps in: the server's own
 * timeout fires first whenever the SQL left it in place and let it work.
 */
export const DEADLINE_GRACE_MS = 1000;

/** Time a cancelled statement has to end before its backend is terminated. */
export const CANCEL_GRACE_MS = 1000;

/** The error a statement gets once its transaction is past its deadline: PostgreSQL's query_canceled. */
export function deadlineError(ms: number): Error {
  return Object.assign(new Error(`canceling statement: the transaction ran longer than ${ms} ms`), {
    code: "57014",
  });
}

/** Ends the backend `pid`, as one of the pool's own role (PostgreSQL lets a role end its own sessions). */
export type Terminate = (pid: number) => Promise<void>;

/**
 * A Terminate that connects to `url` for that alone: a pool full of stuck transactions cannot hold it back. The
 * statement is the platform's own, its one value a number.
 */
export function terminator(url: string): Terminate {
  return async (pid) => {
    const sql = postgres(url, {
      max: 1,
      connect_timeout: 10,
      onnotice: () => {},
      connection: { application_name: "platform-deadline" },
    });
    try {
      await sql`select pg_catalog.pg_terminate_backend(${pid}::int)`;
      log.warn("a transaction outlived its deadline: its backend was terminated", { pid });
    } catch (err) {
      log.error("a transaction outlived its deadline and its backend could not be terminated", {
        pid,
        code: (err as { code?: string }).code ?? "unknown",
      });
    } finally {
      await sql.end({ timeout: 1 }).catch(() => {});
    }
  };
}

/**
 * Bounds a PostgreSQL transaction's whole time from the client. `set local statement_timeout` alone does not:
 * SQL the transaction runs can lift it (`set statement_timeout = 0`), trap the cancel it causes (PL/pgSQL's
 * `exception when query_canceled`), and it bounds each statement, not their sum. Past `ms`, the statement
 * running is cancelled (the protocol's CancelRequest, on a socket of its own) and every later one is refused
 * unsent; a statement still running `CANCEL_GRACE_MS` later gets `stop` (its session ended), which no SQL can trap.
 */
export class TransactionDeadline {
  /** True once the deadline has passed: whatever the transaction's statements failed with, it was this. */
  expired = false;
  private readonly running = new Set<postgres.PendingQuery<postgres.Row[]>>();
  private readonly timers: ReturnType<typeof setTimeout>[] = [];

  constructor(private readonly ms: number, private readonly stop: () => void) {
    this.timers.push(setTimeout(() => this.expire(), ms));
  }

  /** Runs `query` (not yet sent) under the deadline. */
  async run<T>(query: postgres.PendingQuery<postgres.Row[]>): Promise<T> {
    if (this.expired) throw deadlineError(this.ms);
    this.running.add(query);
    try {
      return await query as unknown as T;
    } finally {
      this.running.delete(query);
    }
  }

  /** The error to report for `err`, a statement's failure: the deadline's once it has passed. */
  reason(err: unknown): unknown {
    return this.expired ? deadlineError(this.ms) : err;
  }

  /** The transaction has ended: the timers go. */
  end(): void {
    for (const timer of this.timers) clearTimeout(timer);
  }

  private expire(): void {
    this.expired = true;
    // A cancel that reaches the server between two statements finds nothing to cancel; the next one is refused.
    for (const query of this.running) query.cancel();
    this.timers.push(setTimeout(() => {
      if (this.running.size > 0) this.stop();
    }, CANCEL_GRACE_MS));
  }
}

/**
 * Bounds a pipelined transaction (every statement already sent on one connection): past `ms` it gets `stop`
 * (its session ended). A cancel is not used there: postgres.js pairs answers with queries wrongly once several
 * queued ones are cancelled.
 */
export class PipelineDeadline {
  expired = false;
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(ms: number, stop: () => void) {
    this.timer = setTimeout(() => {
      this.expired = true;
      stop();
    }, ms);
  }

  end(): void {
    clearTimeout(this.timer);
  }
}
