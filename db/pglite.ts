import type { Db, PipelineOptions, PipelineStatement, Queryable } from "./driver.ts";
import {
  deserializeError,
  type SerializedError,
  type WorkerCall,
  type WorkerMessage,
  type WorkerRequest,
} from "./pglite_protocol.ts";

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/**
 * The platform's side of one PGlite worker (db/pglite_worker.ts): calls travel as messages, answers come back
 * by id. The engine then runs on its own thread while this one serves requests.
 */
class PgliteClient {
  private readonly worker: Worker;
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

  /** Sends `call` and resolves with its answer. */
  call<T>(call: WorkerCall, id = this.nextId++): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ ...call, id } satisfies WorkerRequest);
    });
  }

  /** A pipeline whose end is decided here: the worker sends the rows, holds the transaction, and waits. */
  decidedPipeline(
    statements: PipelineStatement[],
    decide: (rows: Record<string, unknown>[][]) => "commit" | "rollback",
    readOnly: boolean,
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
    }, id);
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
    } else {
      const pending = this.pending.get(m.id);
      if (!pending) return;
      this.pending.delete(m.id);
      if (m.ok) pending.resolve(m.value);
      else pending.reject(deserializeError(m.error as SerializedError));
    }
  }

  private stop(reason: Error): void {
    this.failure ??= reason;
    this.worker.terminate();
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
    this.deciders.clear();
    this.listeners.clear();
  }
}

function queryable(client: PgliteClient, tx?: number): Queryable {
  return {
    query: <T>(sql: string, params: unknown[] = []) => client.call<T[]>({ op: "query", tx, sql, params }),
    exec: (sql: string) => client.call<void>({ op: "exec", tx, sql }),
    execRows: (sql: string) => client.call<Record<string, unknown>[]>({ op: "execRows", tx, sql }),
  };
}

/**
 * Opens (creating when new) an embedded PGlite database in `dir`, on a thread of its own. One process may hold
 * a directory.
 */
export async function openPglite(dir: string): Promise<Db> {
  await Deno.mkdir(dir, { recursive: true });
  const client = new PgliteClient();
  try {
    await client.call({ op: "open", dir });
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return {
    kind: "pglite",
    ...queryable(client),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const tx = await client.call<number>({ op: "begin" });
      let result: T;
      try {
        result = await fn(queryable(client, tx));
      } catch (err) {
        await client.call({ op: "end", tx, commit: false }).catch(() => {});
        throw err;
      }
      await client.call({ op: "end", tx, commit: true });
      return result;
    },
    pipeline(statements: PipelineStatement[], { end, readOnly = false }: PipelineOptions) {
      if (typeof end === "function") return client.decidedPipeline(statements, end, readOnly);
      return client.call<Record<string, unknown>[][]>({ op: "pipeline", statements, end, readOnly });
    },
    async listen(channel, onPayload) {
      const listener = await client.listen(channel, onPayload);
      return () => client.unlisten(listener);
    },
    close: () => client.close(),
  };
}
