import {
  type Db,
  type PipelineOptions,
  type PipelineStatement,
  type Queryable,
  sqlState,
  type TransactionOptions,
} from "./driver.ts";
import {
  deserializeError,
  type SerializedError,
  statementTimeout,
  TimeoutGate,
  type WorkerCall,
  type WorkerMessage,
  type WorkerRequest,
} from "./pglite_protocol.ts";

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Milliseconds the call may run once the engine starts it (a statement timeout). */
  timeoutMs?: number;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The platform's side of one PGlite worker (db/pglite_worker.ts): calls travel as messages, answers come back
 * by id. The engine then runs on its own thread while this one serves requests.
 *
 * Statement timeouts: the engine cannot interrupt itself (its SIGALRM is a JavaScript timer of its own busy
 * thread), and terminating the thread does not stop WebAssembly that runs (docs/data.md). So a call that carries
 * a timeout is timed here from the moment the engine starts it; when the timeout fires first, the call fails
 * with 57014 at once and the worker, through the gate, rolls back what the call did once the engine is done.
 */
class PgliteClient {
  private readonly worker: Worker;
  readonly gate = new TimeoutGate();
  private readonly pending = new Map<number, Pending>();
  /** The end function of each pipeline whose decision is taken here, by the pipeline call's id. */
  private readonly deciders = new Map<number, (rows: Record<string, unknown>[][]) => void>();
  private readonly listeners = new Map<number, (payload: string) => void>();
  private nextId = 1;
  private failure: Error | undefined;

  constructor() {
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
    const id = options.id ?? this.nextId++;
    const { timeoutMs } = options;
    const request = { ...call, id } as WorkerRequest;
    if (timeoutMs !== undefined) (request as { watch?: boolean }).watch = true;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timeoutMs });
      this.worker.postMessage(request);
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

  listen(channel: string, onPayload: (payload: string) => void): Promise<number> {
    return this.call<number>({ op: "listen", channel }).then((listener) => {
      this.listeners.set(listener, onPayload);
      return listener;
    });
  }

  async unlisten(listener: number): Promise<void> {
    this.listeners.delete(listener);
    await this.call({ op: "unlisten", listener });
  }

  /** Closes the engine and ends its thread; after a crash, only ends the thread. */
  async close(): Promise<void> {
    try {
      if (!this.failure) await this.call({ op: "close" });
    } finally {
      this.stop(new Error("The embedded database is closed"));
    }
  }

  private receive(m: WorkerMessage): void {
    if ("listener" in m) {
      this.listeners.get(m.listener)?.(m.payload);
    } else if ("rows" in m) {
      this.deciders.get(m.rows)?.(m.value);
    } else if ("started" in m) {
      const pending = this.pending.get(m.started);
      if (pending?.timeoutMs === undefined) return;
      pending.timer = setTimeout(() => {
        // Only while the engine still runs it: an answer on its way wins.
        if (!this.gate.expire(m.started)) return;
        this.pending.delete(m.started);
        pending.reject(statementTimeout());
      }, pending.timeoutMs);
    } else {
      const pending = this.pending.get(m.id);
      if (!pending) return;
      this.pending.delete(m.id);
      clearTimeout(pending.timer);
      if (m.ok) pending.resolve(m.value);
      else pending.reject(deserializeError(m.error as SerializedError));
    }
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
  const client = new PgliteClient();
  try {
    await client.call({ op: "open", dir, gate: client.gate.buffer, maxPrepared: options.maxPrepared });
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return {
    kind: "pglite",
    ...queryable(client),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
      const tx = await client.call<number>({ op: "begin" });
      let result: T;
      try {
        const q = queryable(client, tx, options?.timeoutMs);
        if (options?.timeoutMs !== undefined) {
          await q.exec(`set local statement_timeout = ${Math.max(1, Math.floor(options.timeoutMs))}`);
        }
        result = await fn(q);
      } catch (err) {
        const ending = client.call({ op: "end", tx, commit: false }).catch(() => {});
        // After a timeout the engine still runs the late statement; the rollback follows it, unawaited, so
        // that the caller has its answer now.
        if (sqlState(err) !== "57014") await ending;
        throw err;
      }
      await client.call({ op: "end", tx, commit: true });
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
