import { connectionLost, fromServer } from "../lib/connection_lost.ts";

/** A connection or transaction that runs parameterized SQL. */
export interface Queryable {
  /** Runs one statement with `$1…$n` parameters and returns its rows. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations, DDL). */
  exec(sql: string): Promise<void>;
  /** Runs a script and returns the rows of its last statement that returns a result set ([] when none does). */
  execRows(sql: string): Promise<Record<string, unknown>[]>;
}

/** One statement of a pipeline. */
export interface PipelineStatement {
  sql: string;
  /** `$1…$n` values, sent as text: strings, numbers, bigints, booleans or null. */
  params: unknown[];
}

/**
 * How a pipelined transaction ends: `commit` or `rollback` travel with the statements; a function sees the rows
 * of every statement first and decides (when it throws, the transaction rolls back and the error propagates).
 */
export type PipelineEnd =
  | "commit"
  | "rollback"
  | ((rows: Record<string, unknown>[][]) => "commit" | "rollback");

/** A transaction isolation level, as `begin isolation level …` takes it. */
export type IsolationLevel = "read committed" | "repeatable read" | "serializable";

/** The statement that starts a pipelined transaction: `begin`, then its isolation level and access mode. */
export function beginSql(o: { readOnly?: boolean; isolation?: IsolationLevel }): string {
  const isolation = o.isolation ? ` isolation level ${o.isolation}` : "";
  return `begin${isolation}${o.readOnly ? " read only" : ""}`;
}

/** Options of {@linkcode Db.pipeline}. */
export interface PipelineOptions {
  end: PipelineEnd;
  /** Start the transaction read only (PostgREST runs GET and HEAD so). */
  readOnly?: boolean;
  /** The transaction's isolation level (absent: the session's default, read committed). */
  isolation?: IsolationLevel;
  /**
   * The `statement_timeout` the statements set for themselves, in milliseconds. PostgreSQL enforces it; PGlite
   * cannot interrupt a statement, so its driver fails a pipeline that runs this long with the same error (57014)
   * and rolls back what it did once the statement ends (docs/data.md).
   */
  timeoutMs?: number;
}

/** Options of {@linkcode Db.transaction}. */
export interface TransactionOptions {
  /**
   * Sets `statement_timeout` (milliseconds) for the transaction. On PostgreSQL the driver also bounds the
   * transaction's whole time (a second longer), whatever its SQL does to the setting: past it the statement
   * running is cancelled (57014) and the transaction rolls back. PGlite cannot interrupt a statement: its driver
   * fails a call that runs this long with the same error (57014), and the transaction then rolls back once the
   * statement ends (docs/data.md).
   */
  timeoutMs?: number;
  /**
   * False for statements whose text varies (generated or written by users): PostgreSQL then does not keep them
   * prepared (postgres.js keeps every text it prepares until the connection closes). PGlite never keeps them.
   */
  prepare?: false;
  /**
   * SQL run on the same session once the transaction has ended, committed or rolled back, before any other
   * statement reaches that session: what a caller's SQL left on a session shared with others (PGlite has one)
   * is undone even when that SQL ended the transaction itself (`commit; …`) and then failed.
   */
  after?: string;
}

/** The one driver interface: PostgreSQL (postgres.js) and PGlite both implement it with the same SQL. */
export interface Db extends Queryable {
  readonly kind: "postgres" | "pglite";
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs `statements` in order in one transaction, sent together: the database is reached once, or twice when
   * `end` is a function. Returns the rows of each statement. The first failing statement's error is thrown and
   * the transaction rolled back. For hot paths (the data API): a transaction costs one round trip, not one per
   * statement.
   */
  pipeline(statements: PipelineStatement[], options: PipelineOptions): Promise<Record<string, unknown>[][]>;
  /** Subscribes to `LISTEN channel`; returns the function that unsubscribes. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The SQLSTATE of a database error, if it carries one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  // A socket's or the driver's code (EPIPE has five letters too) is no SQLSTATE.
  return connectionLost(err) && !fromServer(err) ? undefined : code;
}
