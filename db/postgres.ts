import postgres from "postgres";
import {
  beginSql,
  type Db,
  type PipelineOptions,
  type PipelineStatement,
  type Queryable,
  quoteIdent,
  type TransactionOptions,
} from "./driver.ts";
import {
  DEADLINE_GRACE_MS,
  deadlineError,
  PipelineDeadline,
  terminator,
  TransactionDeadline,
} from "./pg_deadline.ts";
import { ConnectionStatements } from "./pg_prepared.ts";
import { mayLeaveState, PoolCloses, ReservedConnection, sessionEnded } from "./pg_reserved.ts";
import { connectionLost } from "../lib/connection_lost.ts";
import { log } from "../lib/log.ts";

type Sql = postgres.Sql | postgres.TransactionSql;

/** Runs `fn` once more when it failed because the server ended the session (see sessionEnded). */
async function onceMoreIfSessionEnded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!sessionEnded(err)) throw err;
    return await fn();
  }
}

/**
 * What guards statements: a transaction's deadline and the reserved connection it runs on; on the pool, what to
 * do when a statement's connection was lost.
 */
interface TransactionGuard {
  deadline?: TransactionDeadline;
  reserved?: ReservedConnection;
  onLost?: () => void;
}

/** A transaction's statements, and how to end them (see wrap). */
interface TransactionQueryable extends Queryable {
  /** No statement is sent from now on; resolves once the one sent last has settled. */
  finish(): Promise<void>;
}

/**
 * `prepare: false` runs parameterized statements unnamed (see TransactionOptions.prepare); `guard` bounds a
 * transaction's statements (see TransactionDeadline) and sends none on a connection that was lost. A
 * transaction's statements run one at a time, in the order given: postgres.js drops the ones queued on a
 * reserved connection unsettled when it closes, and pairs answers wrongly once several queued ones are cancelled.
 */
function wrap(sql: Sql, prepare?: false, guard: TransactionGuard = {}): TransactionQueryable {
  const options = prepare === false ? { prepare: false } : undefined;
  const { deadline, reserved, onLost } = guard;
  let tail: Promise<unknown> = Promise.resolve();
  let finished = false;
  const runNow = async <T>(query: postgres.PendingQuery<postgres.Row[]>): Promise<T> => {
    if (finished) throw Object.assign(new Error("the transaction has ended"), { code: "25000" });
    if (reserved?.lost) throw ReservedConnection.lostError();
    try {
      const answer = deadline ? deadline.run<T>(query) : query as unknown as Promise<T>;
      return reserved ? await reserved.race(answer) : await answer;
    } catch (err) {
      reserved?.note(err);
      if (onLost && mayLeaveState(err)) onLost();
      throw err;
    }
  };
  const run = <T>(query: postgres.PendingQuery<postgres.Row[]>): Promise<T> => {
    if (!reserved) return runNow<T>(query);
    const turn = tail.then(() => runNow<T>(query));
    tail = turn.catch(() => {});
    return turn;
  };
  return {
    async finish() {
      finished = true;
      await tail;
    },
    async query<T>(text: string, params: unknown[] = []) {
      return await run<T[]>(sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], options));
    },
    async exec(text: string) {
      await run(sql.unsafe(text));
    },
    async execRows(text: string) {
      const result = await run<postgres.RowList<postgres.Row[]>>(sql.unsafe(text));
      // One statement gives one row list; several give a list of row lists.
      const lists = result.length > 0 && Array.isArray(result[0])
        ? result as unknown as postgres.RowList<postgres.Row[]>[]
        : [result];
      const last = lists.findLast((l) => (l.columns?.length ?? 0) > 0);
      return last ? [...last] : [];
    },
  };
}

function serializeJson(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Options of {@linkcode openPostgres}. */
export interface PostgresOptions {
  /** Connections in the pool. */
  max: number;
  /** Seconds an idle connection is kept. */
  idleTimeout?: number;
  /** Statement texts each connection keeps prepared for {@linkcode Db.pipeline} (default MAX_PREPARED_TEXTS). */
  maxPrepared?: number;
  /**
   * Prepare parameterized `query()` statements (default true). False for pools that run SQL their users wrote
   * (owner SQL): postgres.js keeps every text it prepares until the connection closes.
   */
  prepare?: boolean;
  /**
   * The connections' `search_path`, fixed at login. The platform's own pool on a project database names no
   * schema a tenant can write, so no function or operator a tenant defines can stand in for a built-in there.
   */
  searchPath?: string;
}

/**
 * The most statement texts a connection keeps prepared for {@linkcode Db.pipeline}: the bound caps the server
 * memory that many query shapes could take. Past it, the least recently used one is deallocated.
 */
export const MAX_PREPARED_TEXTS = 256;

/** What postgres.js sets on a query it sends: the connection's backend (`state`) and statement (`statement`). */
interface SentQuery {
  state?: { pid: number | null } | null;
  statement?: { name?: string };
}

/**
 * The backend of the connection `query` was given to: postgres.js hands a reserved connection's query to it a
 * tick after `execute()`, before anything is written (writes wait for the next macrotask).
 */
async function backendOf(query: SentQuery): Promise<{ pid: number | null } | undefined> {
  for (let tick = 0; tick < 8 && !query.state; tick++) await null;
  return query.state ?? undefined;
}

/** How long a renewed-away pool lets its work finish before it is ended (past every transaction's timeout). */
const RETIRED_POOL_SECONDS = 65;

let driverGuarded = false;

/**
 * postgres.js keeps no promise of two things it starts itself (3.4.9): a new connection's array-type lookup
 * (connection.js `fetchArrayTypes`) and a query's CancelRequest (`Query.cancel()` drops its canceller's
 * promise). A connection lost at that moment rejects them with no one to hear, and Deno ends the process on an
 * unhandled rejection. The loss is already answered (the connection's queries fail, the pool connects again and
 * looks the types up then; a deadline's grace ends a statement its cancel missed), so a rejection of a lost
 * connection (see connectionLost) is logged, not fatal. Any other stays fatal.
 */
function guardDriverRejections(): void {
  if (driverGuarded) return;
  driverGuarded = true;
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (!connectionLost(event.reason)) return;
    event.preventDefault();
    log.warn("a database connection was lost under the driver's own query", {
      code: (event.reason as { code: string }).code,
    });
  });
}

/** Opens a pooled PostgreSQL connection through postgres.js. */
export function openPostgres(url: string, options: PostgresOptions): Db {
  guardDriverRejections();
  /** Each pool's connection closes (see ReservedConnection.reserve). */
  const closesOf = new WeakMap<postgres.Sql, PoolCloses>();
  const open = () => {
    const closes = new PoolCloses();
    const pool = connect(closes.onclose);
    closesOf.set(pool, closes);
    return pool;
  };
  const connect = (onclose: () => void) =>
    postgres(url, {
      onclose,
      max: options.max,
      idle_timeout: options.idleTimeout ?? 60,
      prepare: options.prepare ?? true,
      onnotice: () => {},
      // A string given for a json/jsonb parameter is JSON text already (as PGlite takes it): do not encode it twice.
      types: {
        json: { to: 114, from: [114], serialize: serializeJson, parse: JSON.parse },
        jsonb: { to: 3802, from: [3802], serialize: serializeJson, parse: JSON.parse },
      },
      transform: { undefined: null },
      connection: {
        application_name: "platform",
        ...(options.searchPath ? { search_path: options.searchPath } : {}),
      },
    });
  let closing = false;
  /** The pool new work goes to (see renew). */
  let sql = open();
  const first = sql;
  let base = wrap(first, undefined, { onLost: () => renew(first) });
  /** LISTEN has a connection of its own, which postgres.js connects again by itself: never renewed. */
  const listener = open();
  /** Pools renewed away, with the timer that ends each once its work had time to finish. */
  const retired = new Map<postgres.Sql, ReturnType<typeof setTimeout>>();
  const retire = async (pool: postgres.Sql) => {
    clearTimeout(retired.get(pool));
    retired.delete(pool);
    await pool.end({ timeout: 5 }).catch(() => {});
  };
  /**
   * Gives new work a new pool once a connection of `from` (the current one) was lost under its work: postgres.js
   * keeps such a connection's last state and hands it to what it connects for next, and a reservation given it
   * never settles (postgres.js issue 1195, 3.4.9). The old pool ends once its work is done. One renewal serves all
   * the losses of a server restart: the others are the old pool's.
   */
  function renew(from: postgres.Sql): void {
    if (from !== sql || closing) return;
    sql = open();
    const pool = sql;
    base = wrap(pool, undefined, { onLost: () => renew(pool) });
    retired.set(from, setTimeout(() => retire(from), RETIRED_POOL_SECONDS * 1000));
    log.warn("a database connection was lost under its work: new work goes to a new pool");
  }
  /**
   * A connection of the current pool for one transaction. A reservation that met a connection's last state (see
   * renew) is made once more, from a new pool.
   */
  async function reserve(): Promise<ReservedConnection> {
    const pool = sql;
    try {
      return await ReservedConnection.reserve(pool, () => renew(pool), closesOf.get(pool)!);
    } catch (err) {
      if (!mayLeaveState(err)) throw err;
      renew(pool);
      const next = sql;
      return await ReservedConnection.reserve(next, () => renew(next), closesOf.get(next)!);
    }
  }
  const terminate = terminator(url);
  /** Ends a transaction's session past its deadline: this side's socket first, then the server's backend. */
  const stop = (reserved: ReservedConnection) => {
    if (reserved.lost) return; // its connection may serve other work by now
    const pid = reserved.pid;
    reserved.drop();
    if (pid !== undefined) void terminate(pid);
  };
  const maxPrepared = options.maxPrepared ?? MAX_PREPARED_TEXTS;
  /** The prepared statements of each connection, by its backend (a new pid: reconnected, nothing prepared). */
  const perConnection = new WeakMap<object, ConnectionStatements>();
  const statementsOf = (backend: { pid: number | null }) => {
    let kept = perConnection.get(backend);
    if (!kept || kept.pid !== backend.pid) {
      kept = new ConnectionStatements(maxPrepared, backend.pid ?? -1);
      perConnection.set(backend, kept);
    }
    return kept;
  };
  return {
    kind: "postgres",
    // A statement the server ended with its session (one statement: it rolled back) is sent once more, on the
    // current pool: after a restart postgres.js fails the first query of each reconnected connection so, unsent.
    query: (text, params) => onceMoreIfSessionEnded(() => base.query(text, params)),
    exec: (text) => base.exec(text),
    execRows: (text) => base.execRows(text),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
      // A reserved connection rather than postgres.js's begin(): begin() sends its ROLLBACK on a connection that
      // has closed, which throws outside any promise (see ReservedConnection).
      const ms = options?.timeoutMs === undefined ? undefined : Math.max(1, Math.floor(options.timeoutMs));
      const reserved = await reserve();
      const deadline = ms === undefined
        ? undefined
        : new TransactionDeadline(ms + DEADLINE_GRACE_MS, () => stop(reserved));
      const tx = wrap(reserved.sql, options?.prepare, { deadline, reserved });
      try {
        try {
          await reserved.race(reserved.begin("begin"));
        } catch (err) {
          reserved.note(err);
          throw err;
        }
        if (ms !== undefined) await tx.exec(`set local statement_timeout = ${ms}`);
        const result = await fn(tx);
        await tx.exec("commit");
        return result;
      } catch (err) {
        // What `fn` left queued is not sent; the rollback follows what it had sent.
        await tx.finish();
        if (!reserved.lost) {
          await reserved.race(reserved.sql.unsafe("rollback")).catch((e) => reserved.note(e));
        }
        throw deadline ? deadline.reason(err) : err;
      } finally {
        await tx.finish();
        deadline?.end();
        // Before the connection serves anyone else. One that fails is dropped rather than handed back unreset.
        if (options?.after !== undefined && !reserved.lost) {
          await reserved.race(reserved.sql.unsafe(options.after)).catch((e) => {
            reserved.note(e);
            reserved.drop();
          });
        }
        reserved.release();
      }
    },
    async pipeline(
      statements: PipelineStatement[],
      { end, readOnly, isolation, timeoutMs }: PipelineOptions,
    ) {
      // One reserved connection; postgres.js writes queries issued without awaiting in one batch, so BEGIN, the
      // statements and a fixed COMMIT reach the server together. A COMMIT after a failed statement rolls back.
      const reserved = await reserve();
      const conn = reserved.sql;
      let deadline: PipelineDeadline | undefined;
      try {
        const begin = reserved.begin(beginSql({ readOnly, isolation }));
        const backend = await backendOf(begin as unknown as SentQuery);
        // The statements set their own timeout, which the project's SQL can lift or trap: the whole pipeline is
        // bounded here too, as on PGlite.
        if (timeoutMs !== undefined) {
          deadline = new PipelineDeadline(timeoutMs + DEADLINE_GRACE_MS, () => stop(reserved));
        }
        const kept = backend ? statementsOf(backend) : undefined;
        const keep = new Set(statements.map((s) => s.sql));
        const evicted = kept?.takeStale() ?? [];
        const queries = statements.map((s) => {
          const how = kept?.admit(s.sql, keep) ?? { sent: s.sql, prepare: false };
          if (how.evicted) evicted.push(how.evicted);
          return conn.unsafe(how.sent, s.params as postgres.ParameterOrJSON<never>[], {
            prepare: how.prepare,
            simple: false,
          } as postgres.UnsafeQueryOptions);
        });
        const sent = [begin, ...queries];
        if (typeof end === "string") sent.push(conn.unsafe(end));
        // Deallocations travel after the transaction's end, outside it: one that fails cannot undo the work.
        // postgres.js sends queries in the order they are handed over (execute, then, catch), so hand the
        // transaction's over first.
        const deallocate = () =>
          evicted.map((name) => conn.unsafe(`deallocate ${quoteIdent(name)}`).catch(() => {}));
        for (const q of sent) q.execute();
        const settling = Promise.allSettled(sent);
        const freed = typeof end === "string" ? deallocate() : [];
        const settled = await reserved.race(settling);
        await reserved.race(Promise.all(freed));
        statements.forEach((s, i) =>
          kept?.named(s.sql, (queries[i] as unknown as SentQuery).statement?.name)
        );
        const failed = settled.find((r) => r.status === "rejected");
        for (const r of settled) if (r.status === "rejected") reserved.note(r.reason);
        if (failed) {
          if (typeof end !== "string" && !reserved.lost) {
            await reserved.race(conn.unsafe("rollback")).catch(() => {});
            await reserved.race(Promise.all(deallocate())).catch(() => {});
          }
          throw failed.reason;
        }
        const rows = settled.slice(1, 1 + statements.length).map((r) =>
          [...(r as PromiseFulfilledResult<postgres.Row[]>).value] as Record<string, unknown>[]
        );
        if (typeof end === "string") return rows;
        let decision: "commit" | "rollback";
        try {
          decision = end(rows);
        } catch (err) {
          await reserved.race(conn.unsafe("rollback")).catch(() => {});
          await reserved.race(Promise.all(deallocate())).catch(() => {});
          throw err;
        }
        const closing = conn.unsafe(decision === "commit" ? "commit" : "rollback").execute();
        const later = deallocate();
        await reserved.race(closing);
        await reserved.race(Promise.all(later));
        return rows;
      } catch (err) {
        // The connection was ended under the statements: the timeout is what happened.
        throw deadline?.expired ? deadlineError(timeoutMs!) : err;
      } finally {
        deadline?.end();
        reserved.release();
      }
    },
    async listen(channel, onPayload) {
      const sub = await listener.listen(channel, onPayload);
      return () => sub.unlisten();
    },
    async close() {
      closing = true;
      await Promise.all([
        sql.end({ timeout: 5 }),
        listener.end({ timeout: 5 }),
        ...[...retired.keys()].map(retire),
      ]);
    },
  };
}
