import type { Db, PipelineOptions, PipelineStatement, Queryable, TransactionOptions } from "./driver.ts";
import { DatabaseError } from "./pg_backend.ts";
import {
  deserializeError,
  type SerializedError,
  type WorkerCall,
  type WorkerMessage,
  type WorkerRequest,
} from "./pglite_protocol.ts";

/** A call awaiting its answer; kept whole so that it can be sent again to a restarted engine. */
interface Pending {
  request: WorkerRequest;
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Milliseconds the call may run once started (a statement timeout). */
  timeoutMs?: number;
  /** The engine began running it (only watched calls say so). */
  started: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

/** The error PostgreSQL raises when `statement_timeout` cancels a statement: callers map both the same way. */
function statementTimeout(): DatabaseError {
  return new DatabaseError({
    S: "ERROR",
    C: "57014",
    M: "canceling statement due to statement timeout",
  });
}

/**
 * The platform's side of one PGlite worker (db/pglite_worker.ts): calls travel as messages, answers come back
 * by id. The engine then runs on its own thread while this one serves requests.
 *
 * Statement timeouts: the engine runs each call to completion on its thread and its own timer cannot fire
 * meanwhile (PostgreSQL's SIGALRM is a JavaScript timer there), so a call that carries a timeout is watched
 * from here. When it runs past it, the thread is terminated, the call fails with 57014, and a new thread
 * reopens the data directory (PostgreSQL's crash recovery keeps what was committed, as after a killed backend);
 * the calls that had not started yet are sent to it, the listeners listen again, open transactions fail.
 */
class PgliteClient {
  private worker!: Worker;
  private readonly pending = new Map<number, Pending>();
  /** The end function of each pipeline whose decision is taken here, by the pipeline call's id. */
  private readonly deciders = new Map<number, (rows: Record<string, unknown>[][]) => void>();
  private readonly listeners = new Map<number, { channel: string; onPayload: (payload: string) => void }>();
  /** Transactions open in the current engine, by id. */
  private readonly transactions = new Set<number>();
  private nextId = 1;
  private failure: Error | undefined;
  /** Set while a new engine opens: calls wait in `pending`, unsent. */
  private reopening: Promise<void> | undefined;

  constructor(private readonly open: WorkerCall & { op: "open" }) {
    this.start();
  }

  private start(): void {
    this.worker = new Worker(new URL("./pglite_worker.ts", import.meta.url), { type: "module" });
    this.worker.onmessage = (e: MessageEvent<WorkerMessage>) => this.receive(e.data);
    this.worker.onerror = (e: ErrorEvent) => {
      // The engine's thread died (a WebAssembly trap, out of memory): fail what it held, keep the platform up.
      e.preventDefault();
      this.stop(new Error(`The embedded database stopped: ${e.message}`));
    };
  }

  /** Sends `call` and resolves with its answer; `timeoutMs` watches it once it starts (see the class). */
  call<T>(call: WorkerCall, options: { id?: number; timeoutMs?: number } = {}): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const tx = (call as { tx?: number }).tx;
    if (tx !== undefined && !this.transactions.has(tx)) {
      return Promise.reject(new Error("The transaction is closed"));
    }
    const id = options.id ?? this.nextId++;
    const request = { ...call, id } as WorkerRequest;
    if (options.timeoutMs !== undefined) (request as { watch?: boolean }).watch = true;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, {
        request,
        resolve: resolve as (value: unknown) => void,
        reject,
        timeoutMs: options.timeoutMs,
        started: false,
      });
      if (!this.reopening) this.worker.postMessage(request);
    });
  }

  /** A pipeline whose end is decided here: the worker sends the rows, holds the transaction, and waits. */
  decidedPipeline(
    statements: PipelineStatement[],
    decide: (rows: Record<string, unknown>[][]) => "commit" | "rollback",
    readOnly: boolean,
    timeoutMs: number | undefined,
  ): Promise<Record<string, unknown>[][]> {
    const id = this.nextId++;
    let thrown: { err: unknown } | undefined;
    this.deciders.set(id, (rows) => {
      let decision: "commit" | "rollback";
      try {
        decision = decide(rows);
      } catch (err) {
        thrown = { err };
        decision = "rollback";
      }
      this.worker.postMessage(
        { op: "decide", pipeline: id, decision, id: this.nextId++ } satisfies WorkerRequest,
      );
    });
    const done = this.call<Record<string, unknown>[][]>({
      op: "pipeline",
      statements,
      end: "decide",
      readOnly,
    }, { id, timeoutMs });
    return done.then((rows) => {
      if (thrown) throw thrown.err;
      return rows;
    }).finally(() => this.deciders.delete(id));
  }

  /** Opens a transaction: its id, for the calls that run in it. */
  async begin(): Promise<number> {
    const tx = await this.call<number>({ op: "begin" });
    this.transactions.add(tx);
    return tx;
  }

  /** Ends transaction `tx` (nothing to do when a restart already ended it). */
  async end(tx: number, commit: boolean): Promise<void> {
    if (!this.transactions.has(tx)) {
      if (commit) throw new Error("The transaction is closed");
      return;
    }
    try {
      await this.call({ op: "end", tx, commit });
    } finally {
      this.transactions.delete(tx);
    }
  }

  async listen(channel: string, onPayload: (payload: string) => void): Promise<number> {
    const listener = this.nextId++;
    this.listeners.set(listener, { channel, onPayload });
    try {
      await this.call({ op: "listen", channel, listener });
    } catch (err) {
      this.listeners.delete(listener);
      throw err;
    }
    return listener;
  }

  async unlisten(listener: number): Promise<void> {
    this.listeners.delete(listener);
    await this.call({ op: "unlisten", listener });
  }

  /** Closes the engine and ends its thread; after a crash, only ends the thread. */
  async close(): Promise<void> {
    try {
      await this.reopening?.catch(() => {});
      if (!this.failure) await this.call({ op: "close" });
    } finally {
      this.stop(new Error("The embedded database is closed"));
    }
  }

  private receive(m: WorkerMessage): void {
    if ("listener" in m) {
      this.listeners.get(m.listener)?.onPayload(m.payload);
    } else if ("rows" in m) {
      this.deciders.get(m.rows)?.(m.value);
    } else if ("started" in m) {
      const p = this.pending.get(m.started);
      if (!p || p.timeoutMs === undefined) return;
      p.started = true;
      p.timer = setTimeout(() => this.timedOut(m.started), p.timeoutMs);
    } else {
      const pending = this.pending.get(m.id);
      if (!pending) return;
      this.pending.delete(m.id);
      clearTimeout(pending.timer);
      if (m.ok) pending.resolve(m.value);
      else pending.reject(deserializeError(m.error as SerializedError));
    }
  }

  /** Call `id` ran past its timeout: stop the engine, fail the call, reopen (see the class). */
  private timedOut(id: number): void {
    const late = this.pending.get(id);
    if (!late || this.failure) return;
    this.worker.terminate();
    this.pending.delete(id);
    late.reject(statementTimeout());
    // Every transaction of the stopped engine is gone; their waiting calls fail, the others run again.
    const lost = new Set(this.transactions);
    this.transactions.clear();
    for (const [key, p] of this.pending) {
      const tx = (p.request as { tx?: number }).tx;
      if (p.started || (tx !== undefined && lost.has(tx))) {
        this.pending.delete(key);
        clearTimeout(p.timer);
        p.reject(new Error("The transaction is closed"));
      }
    }
    this.reopening = this.reopen().finally(() => this.reopening = undefined);
  }

  private async reopen(): Promise<void> {
    this.start();
    const id = this.nextId++;
    const opened = new Promise<void>((resolve, reject) => {
      this.pending.set(id, {
        request: { ...this.open, id },
        resolve: () => resolve(),
        reject,
        started: false,
      });
    });
    this.worker.postMessage({ ...this.open, id } satisfies WorkerRequest);
    try {
      await opened;
    } catch (err) {
      this.stop(new Error(`The embedded database could not reopen: ${(err as Error).message}`));
      return;
    }
    for (const [listener, { channel }] of this.listeners) {
      this.worker.postMessage({ op: "listen", channel, listener, id: this.nextId++ } satisfies WorkerRequest);
    }
    for (const p of this.pending.values()) this.worker.postMessage(p.request);
  }

  private stop(reason: Error): void {
    this.failure ??= reason;
    this.worker.terminate();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.failure);
    }
    this.pending.clear();
    this.deciders.clear();
    this.listeners.clear();
    this.transactions.clear();
  }
}

function queryable(client: PgliteClient, tx?: number, timeoutMs?: number): Queryable {
  const options = { timeoutMs };
  return {
    query: <T>(sql: string, params: unknown[] = []) =>
      client.call<T[]>({ op: "query", tx, sql, params }, options),
    exec: (sql: string) => client.call<void>({ op: "exec", tx, sql }, options),
    execRows: (sql: string) => client.call<Record<string, unknown>[]>({ op: "execRows", tx, sql }, options),
  };
}

/** Options of {@linkcode openPglite}. */
export interface PgliteOptions {
  /** Statement texts kept prepared for pipelines (default MAX_PREPARED_TEXTS of db/pglite_pipeline.ts). */
  maxPrepared?: number;
}

/**
 * Opens (creating when new) an embedded PGlite database in `dir`, on a thread of its own. One process may hold
 * a directory.
 */
export async function openPglite(dir: string, options: PgliteOptions = {}): Promise<Db> {
  await Deno.mkdir(dir, { recursive: true });
  const open = { op: "open", dir, maxPrepared: options.maxPrepared } as const;
  const client = new PgliteClient(open);
  try {
    await client.call(open);
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return {
    kind: "pglite",
    ...queryable(client),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
      const tx = await client.begin();
      let result: T;
      try {
        const q = queryable(client, tx, options?.timeoutMs);
        if (options?.timeoutMs !== undefined) {
          await q.exec(`set local statement_timeout = ${Math.max(1, Math.floor(options.timeoutMs))}`);
        }
        result = await fn(q);
      } catch (err) {
        await client.end(tx, false).catch(() => {});
        throw err;
      }
      await client.end(tx, true);
      return result;
    },
    pipeline(statements: PipelineStatement[], { end, readOnly = false, timeoutMs }: PipelineOptions) {
      if (typeof end === "function") return client.decidedPipeline(statements, end, readOnly, timeoutMs);
      return client.call<Record<string, unknown>[][]>(
        { op: "pipeline", statements, end, readOnly },
        { timeoutMs },
      );
    },
    async listen(channel, onPayload) {
      const listener = await client.listen(channel, onPayload);
      return () => client.unlisten(listener);
    },
    close: () => client.close(),
  };
}
