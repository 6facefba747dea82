import type postgres from "postgres";

/**
 * Extra time the client gives a transaction past its `statement_timeout` before it cancels it: the server's own
 * timeout fires first whenever the SQL left it in place.
 */
export const DEADLINE_GRACE_MS = 1000;

/** The error a statement gets once its transaction is past its deadline: PostgreSQL's query_canceled. */
export function deadlineError(ms: number): Error {
  return Object.assign(new Error(`canceling statement: the transaction ran longer than ${ms} ms`), {
    code: "57014",
  });
}

/**
 * Bounds a PostgreSQL transaction's whole time from the client. `set local statement_timeout` alone does not:
 * SQL the transaction runs can lift it (`set statement_timeout = 0`), and it bounds each statement, not their
 * sum. Past `ms`, the statement running is cancelled (the protocol's CancelRequest, on a connection of its own,
 * so a full pool cannot hold it back) and every later one is refused unsent: the transaction then rolls back.
 */
export class TransactionDeadline {
  private expired = false;
  private readonly running = new Set<postgres.PendingQuery<postgres.Row[]>>();
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(private readonly ms: number) {
    this.timer = setTimeout(() => this.expire(), ms);
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

  /** The transaction has ended: the timer goes. */
  end(): void {
    clearTimeout(this.timer);
  }

  private expire(): void {
    this.expired = true;
    // A cancel that reaches the server between two statements finds nothing to cancel; the next one is refused.
    for (const query of this.running) query.cancel();
  }
}
