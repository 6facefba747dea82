import {
  type Db,
  type IsolationLevel,
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
  Vitals,
  type WorkerCall,
  type WorkerMessage,
  type WorkerRequest,
} from "./pglite_protocol.ts";
import {
  gaveUp,
  type InstanceHealth,
  type Monitored,
  pgliteLimits,
  unwatch,
  watch,
} from "./pglite_health.ts";
import { initPgliteDir } from "./pglite_init.ts";
import { pgliteSettings } from "./pglite_settings.ts";
import { extensionFiles } from "./pglite_extensions.ts";
import { engineModule, engineThread } from "./pglite_threads.ts";
import { log } from "../lib/log.ts";
import { sha256Hex } from "../lib/crypto.ts";
import { valueWithin } from "../lib/deadline.ts";
import { trimSoon } from "../lib/rest_gc.ts";
import { AsyncLocalStorage } from "node:async_hooks";

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Milliseconds the call may run once the engine starts it (a statement timeout). */
  timeoutMs?: number;
  timer?: ReturnType<typeof setTimeout>;
  /** Made by a periodic check (inBackground): it does not count as use. */
  quiet: boolean;
}

/** Set while a periodic check runs (see {@linkcode inBackground}). */
const background = new AsyncLocalStorage<true>();

/**
 * Runs `fn`, a periodic check (a cron round, a sweep, an evaluation): the calls it makes to embedded databases
 * do not count as use, so that checks made every few seconds do not keep an idle database open forever.
 */
export function inBackground<T>(fn: () => Promise<T>): Promise<T> {
  return background.run(true, fn);
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
  readonly vitals = new Vitals();
  /** Transactions begun and not ended: the engine is not idle while one is open. */
  openTransactions = 0;
  /** When a call was last sent or answered (Date.now()): the engine's idle time is counted from it. */
  lastActive = Date.now();
  /** Calls sent and answers received (not background ones): every use changes it, even within a millisecond. */
  uses = 0;
  /** Called once when the engine's thread broke or died on its own (not on close or fence). */
  onFailure: (err: Error) => void = () => {};
  private readonly pending = new Map<number, Pending>();
  /** The end function of each pipeline whose decision is taken here, by the pipeline call's id. */
  private readonly deciders = new Map<number, (rows: Record<string, unknown>[][]) => void>();
  private readonly listeners = new Map<number, (payload: string) => void>();
  private nextId = 1;
  private failure: Error | undefined;

  private used(): void {
    this.lastActive = Date.now();
    this.uses++;
  }

  constructor(dir: string) {
    this.worker = engineThread(dir);
    this.worker.onmessage = (e: MessageEvent<WorkerMessage>) => this.receive(e.data);
    this.worker.onerror = (e: ErrorEvent) => {
      // The engine's thread died (a WebAssembly trap, out of memory): fail what it held, keep the platform up.
      e.preventDefault();
      this.fail(new Error(`The embedded database stopped: ${e.message}`));
    };
  }

  /** No call is running or waiting, and no transaction is open. */
  get idle(): boolean {
    return this.pending.size === 0 && this.openTransactions === 0;
  }

  /** Gives up on the engine's thread: it stops at its next file or clock access, never to write again. */
  fence(reason: Error): void {
    this.vitals.fence();
    this.stop(reason);
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.stop(err);
    this.onFailure(err);
  }

  /** Sends `call` and resolves with its answer; `timeoutMs` watches it once it starts (see the class). */
  call<T>(call: WorkerCall, options: { id?: number; timeoutMs?: number } = {}): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = options.id ?? this.nextId++;
    const { timeoutMs } = options;
    const quiet = background.getStore() === true;
    if (!quiet) this.used();
    const request = { ...call, id } as WorkerRequest;
    if (timeoutMs !== undefined) (request as { watch?: boolean }).watch = true;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timeoutMs, quiet });
      this.worker.postMessage(request);
    });
  }

  /** A pipeline whose end is decided here: the worker sends the rows, holds the transaction, and waits. */
  decidedPipeline(
    statements: PipelineStatement[],
    decide: (rows: Record<string, unknown>[][]) => "commit" | "rollback",
    readOnly: boolean,
    timeoutMs: number | undefined,
    isolation?: IsolationLevel,
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
      isolation,
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

  /**
   * Closes the engine and ends its thread; after a crash, only ends the thread. True when the engine shut
   * down cleanly (it was not broken or given up before).
   */
  async close(): Promise<boolean> {
    try {
      if (this.failure) return false;
      await this.call({ op: "close" });
      return true;
    } finally {
      this.stop(new Error("The embedded database is closed"));
    }
  }

  private receive(m: WorkerMessage): void {
    if ("broken" in m) {
      const last = m.last && this.pending.get(m.last.id);
      if (last) this.pending.delete(m.last!.id);
      this.fail(deserializeError(m.broken));
      if (last) this.settle(last, m.last!);
    } else if ("listener" in m) {
      this.listeners.get(m.listener)?.(m.payload);
    } else if ("rows" in m) {
      this.deciders.get(m.rows)?.(m.value);
    } else if ("trim" in m) {
      // The engine's thread collected its garbage; malloc's arenas are trimmed from here (it has no FFI), once
      // per tick of the platform's collector however often threads ask (a thread's messages are not trusted).
      trimSoon();
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
      this.settle(pending, m);
    }
  }

  private settle(
    pending: Pending,
    m: { ok: true; value: unknown } | { ok: false; error: SerializedError },
  ): void {
    if (!pending.quiet) this.used();
    clearTimeout(pending.timer);
    if (m.ok) pending.resolve(m.value);
    else pending.reject(deserializeError(m.error));
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
  /** The `search_path` of its one session, a start setting of each engine opened on the directory. */
  searchPath?: string;
  /** Its `shared_buffers` in MB, when fewer than `pgliteLimits.sharedBuffersMb` serve it. */
  sharedBuffersMb?: number;
  /**
   * Close the engine after `pgliteLimits.idleSecs` without a call, and open it again on the next call. Before
   * it closes, `dueAt` runs on it and answers when work stored in it next falls due (epoch milliseconds; null:
   * nothing is due): until then {@linkcode EmbeddedDb.isResting} tells periodic checks to leave it closed.
   * With `restFile`, that answer is also written there each time the engine ends cleanly, for idleness or on
   * {@linkcode Db.close} (unless idle databases never close: `pgliteLimits.idleSecs` 0), with `restTag`, and the
   * file is removed before any engine opens the directory: a later process reads it with
   * {@linkcode readRestFile} and may leave the directory closed until then.
   */
  closeWhenIdle?: {
    dueAt: (q: Queryable) => Promise<number | null>;
    restFile?: string;
    /**
     * What the answer depends on besides the directory (the schema's migration level, the due-work query): a
     * later process with another tag does not trust the file.
     */
    restTag?: string;
    /**
     * A memo of the database for the next process, made on the engine as it closes cleanly (after `dueAt`) and
     * written in the rest file: what a later process would otherwise read from the database first (the data
     * API's schema cache). It describes the directory as that clean close left it, as the rest of the file
     * does. Null, a failure, more than MAX_MEMO_CHARS or, on a close, more than MEMO_ON_CLOSE_MS: none is kept.
     */
    memo?: (q: Queryable) => Promise<string | null>;
  };
}

/** The largest memo a rest file keeps (a larger one is left out: the next process reads the database). */
const MAX_MEMO_CHARS = 8 * 1048576;

/** What a rest file says (see {@linkcode readRestFile}). */
export interface RestRecord {
  /** When the work stored in the database next falls due (epoch ms; null: nothing is). */
  dueAt: number | null;
  /** The memo made as it closed (PgliteOptions.closeWhenIdle.memo), if one was. */
  memo?: string;
}

/**
 * The fingerprint of a database directory's state: a hash of its `global/pg_control`, which PostgreSQL rewrites
 * at every shutdown (its last checkpoint and the time of it). A directory opened since, or put back from a copy,
 * has another.
 */
async function dirFingerprint(dir: string): Promise<string> {
  return await sha256Hex(await Deno.readFile(`${dir}/global/pg_control`));
}

/**
 * What the rest file `path` of directory `dir` says: when the work stored in the database next falls due, and
 * its memo; undefined when there is no such file (the database was not closed cleanly since it last opened), it
 * cannot be read, or it was written for another state of the directory or under another tag.
 */
export async function readRestFile(path: string, dir: string, tag = ""): Promise<RestRecord | undefined> {
  try {
    const { due_at, state, tag: written, memo } = JSON.parse(await Deno.readTextFile(path));
    if (written !== tag || state !== await dirFingerprint(dir)) return undefined;
    if (due_at !== null && !(typeof due_at === "number" && Number.isFinite(due_at))) return undefined;
    return typeof memo === "string" ? { dueAt: due_at, memo } : { dueAt: due_at };
  } catch {
    return undefined;
  }
}

/**
 * Writes a rest file whole and durably: a crash, of the process or of the machine, leaves the old one or none,
 * never half of one.
 */
async function writeRestFile(path: string, dir: string, tag: string, rest: RestRecord): Promise<void> {
  const next = `${path}.next`;
  const text = JSON.stringify({ due_at: rest.dueAt, state: await dirFingerprint(dir), tag, memo: rest.memo });
  const file = await Deno.open(next, { write: true, create: true, truncate: true });
  try {
    await file.write(new TextEncoder().encode(text));
    await file.syncData();
  } finally {
    file.close();
  }
  await Deno.rename(next, path);
}

/** Removes a rest file (and a half-written one): from then on, only a clean close may write one again. */
export async function removeRestFile(path: string): Promise<void> {
  for (const file of [path, `${path}.next`]) {
    await Deno.remove(file).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
  }
}

/** An embedded database, as {@linkcode openPglite} answers it. */
export interface EmbeddedDb extends Db {
  /** Closed for idleness (closeWhenIdle) with nothing stored in it due by `now`: a periodic check may skip it. */
  isResting(now: number): boolean;
  /** Starts opening the database again if it rests, without a call: one is about to come. */
  wake(): void;
  /**
   * Rests (closes, as when idle) as soon as no call is running, unless one counted as use comes first: for a
   * database that only the platform's own start has used so far.
   */
  restSoon(): void;
}

/** How long closing waits for the engine to finish what it runs before giving it up (a stop must not hang). */
const CLOSE_MS = 10_000;

/** The error of calls that were running or waiting when their engine was given up. */
function restarted(reason: string): Error {
  return Object.assign(new Error(`The embedded database was restarted: ${reason}`), {
    name: "DatabaseError",
    severity: "FATAL",
    code: "57P01",
  });
}

/** A LISTEN of the Db's: it outlives the engine, and is listened to again on the next one. */
interface Subscription {
  channel: string;
  onPayload: (payload: string) => void;
  /** Its listener on `client`. */
  listener?: Promise<number>;
  client?: PgliteClient;
}

/**
 * One embedded database: a directory, and the engine that has it open now. The engine is replaced, on the
 * same directory, when it breaks (db/pglite_worker.ts), when its thread stops answering for `stallMs`, or when
 * it is idle with more than `recycleMemoryMb` of memory (WebAssembly memory never shrinks). Calls made meanwhile
 * wait for the new engine; the ones the old engine held fail with 57P01, and what it committed stays.
 */
class EmbeddedDatabase implements Monitored {
  /** The engine; null while the database rests (closed for idleness, opened again by the next call). */
  private client: PgliteClient | null = null;
  private reopening: Promise<void> | null = null;
  private closed = false;
  /** While it rests: when work stored in it next falls due (epoch ms; Infinity: nothing is). */
  private dueAt = Infinity;
  /** Closed for idleness and not opening again yet (from the moment its engine ended, rest file or not). */
  private asleep = false;
  /** An idle engine is asked when its work falls due, before it closes. */
  private askingDue = false;
  /** Set by restSoon: the engine's use count then; it rests once idle if no use came since. */
  private restIfUnusedSince: number | null = null;
  private restarts = 0;
  private restarting = false;
  private lastRestart: InstanceHealth["last_restart"] = null;
  private readonly subscriptions = new Set<Subscription>();
  readonly name: string;

  constructor(private readonly dir: string, private readonly options: PgliteOptions) {
    const [parent, last] = dir.split(/[\\/]/).filter(Boolean).slice(-2);
    this.name = parent === "projects" ? `project ${last}` : last ?? dir;
  }

  /** Opens an engine on the directory and makes it the current one. */
  async start(): Promise<void> {
    const { searchPath, sharedBuffersMb } = this.options;
    const buffers = Math.min(sharedBuffersMb ?? Infinity, pgliteLimits.sharedBuffersMb);
    const restFile = this.options.closeWhenIdle?.restFile;
    // The thread loads PGlite's code while this one removes the rest file, compiles PGlite's module and reads the
    // extensions (once per process): on two cores the two overlap. The engine opens the directory only once the
    // rest file is gone.
    const client = new PgliteClient(this.dir);
    try {
      const [module, extensions] = await Promise.all([
        engineModule(),
        extensionFiles(),
        restFile ? removeRestFile(restFile) : undefined,
      ]);
      await client.call({
        op: "open",
        dir: this.dir,
        gate: client.gate.buffer,
        vitals: client.vitals.buffer,
        maxPrepared: this.options.maxPrepared,
        maxMemoryBytes: pgliteLimits.maxMemoryMb * 1024 * 1024,
        // PGlite starts its session with its own search_path; a start setting after it replaces it.
        settings: { ...pgliteSettings(buffers), ...(searchPath ? { search_path: searchPath } : {}) },
        module,
        extensions,
      });
    } catch (err) {
      client.fence(err as Error);
      throw err;
    }
    client.onFailure = (err) => this.restart(err.message, "crashed");
    this.client = client;
    for (const sub of this.subscriptions) this.subscribe(sub);
  }

  /** The current engine, or the next one while it opens (a resting database opens again here). */
  use(): PgliteClient | Promise<PgliteClient> {
    if (this.reopening) return this.reopening.then(() => this.use());
    if (this.client) return this.client;
    if (this.closed) return Promise.reject(new Error("The embedded database is closed"));
    return this.wake().then(() => this.use());
  }

  isResting(now: number): boolean {
    return this.asleep && !this.closed && now < this.dueAt;
  }

  /**
   * Closes an idle engine, once it has said when its stored work falls due; a call made meanwhile keeps it open.
   * Calls made while it closes wait, then open a new engine, where the LISTENs are listened to again. Nothing
   * can write to the directory while it rests (one process holds it), so no notification is missed.
   */
  private rest(client: PgliteClient): void {
    const since = client.uses;
    this.askingDue = true;
    this.askRest(client).then(({ dueAt, memo }) => {
      this.askingDue = false;
      const called = !client.idle || client.uses !== since;
      if (called || this.client !== client || this.reopening || this.closed) return;
      this.reopening = (async () => {
        const clean = await closeWithin(client, CLOSE_MS).catch(() => false);
        this.client = null;
        this.dueAt = dueAt;
        this.asleep = true;
        if (clean) await this.rested(dueAt, memo);
        // Much of what the ended engine's thread allocated stays in malloc's arenas until trimmed.
        trimSoon();
        const idleSecs = Math.round((Date.now() - client.lastActive) / 1000);
        log.info("embedded database closed while idle", { database: this.name, idle_secs: idleSecs });
      })().finally(() => this.reopening = null);
    });
  }

  /**
   * When work stored in the database next falls due (Infinity: none; 0: unknown, so the checks open it), and
   * the memo for the rest file (closeWhenIdle.memo; undefined: none).
   */
  private async askRest(client: PgliteClient): Promise<{ dueAt: number; memo?: string }> {
    const dueAt = await this.askDue(client);
    return { dueAt, memo: dueAt === 0 ? undefined : await this.makeMemo(client) };
  }

  /** When work stored in the database next falls due (Infinity: none; 0: unknown, so the checks open it). */
  private askDue(client: PgliteClient): Promise<number> {
    return background.run(true, () => this.options.closeWhenIdle!.dueAt(queryable(client)))
      .then((due) => due ?? Infinity, (err) => {
        log.warn("embedded database: due work unknown", { database: this.name, cause: String(err) });
        return 0;
      });
  }

  /** The memo for the rest file (closeWhenIdle.memo), or undefined: none is made, or it failed. */
  private async makeMemo(client: PgliteClient): Promise<string | undefined> {
    const { memo: make, restFile } = this.options.closeWhenIdle!;
    if (!make || !restFile) return undefined;
    const memo = await background.run(true, () => make(queryable(client))).catch((err) => {
      log.warn("embedded database: no memo for the next start", { database: this.name, cause: String(err) });
      return null;
    });
    return memo !== null && memo.length <= MAX_MEMO_CHARS ? memo : undefined;
  }

  /**
   * Writes the rest file once the engine ended cleanly with work due at `dueAt` (unknown: none is written) and
   * `memo`.
   */
  private async rested(dueAt: number, memo?: string): Promise<void> {
    const path = this.options.closeWhenIdle?.restFile;
    if (dueAt === 0 || !path || pgliteLimits.idleSecs <= 0) return;
    const tag = this.options.closeWhenIdle?.restTag ?? "";
    const rest: RestRecord = {
      dueAt: dueAt === Infinity ? null : dueAt,
      ...(memo === undefined ? {} : { memo }),
    };
    await writeRestFile(path, this.dir, tag, rest).catch((err) =>
      log.warn("embedded database: rest not recorded", { database: this.name, cause: String(err) })
    );
  }

  /** See {@linkcode EmbeddedDb.restSoon}. */
  restSoon(): void {
    if (this.client) this.restIfUnusedSince = this.client.uses;
  }

  /** Whether restSoon asked this engine to rest and nothing has used it since. */
  private unusedSinceRestSoon(client: PgliteClient): boolean {
    if (this.restIfUnusedSince === null) return false;
    if (client.uses === this.restIfUnusedSince) return true;
    this.restIfUnusedSince = null; // used: it rests after PGLITE_IDLE_SECS, as any other
    return false;
  }

  /** Starts opening a resting database before its next call (a failure is that call's to see). */
  wakeEarly(): void {
    if (this.client || this.reopening || this.closed) return;
    this.wake().catch(() => {});
  }

  /** Opens a resting database again; fails (and the next call tries again) when it cannot. */
  private wake(): Promise<void> {
    this.asleep = false;
    const started = performance.now();
    const waking = this.start().then(() => {
      log.info("embedded database reopened", {
        database: this.name,
        ms: Math.round(performance.now() - started),
      });
    }, (err) => {
      // It does not rest any more: it is broken. Readiness and the periodic checks must not take it for resting.
      this.dueAt = 0;
      throw err;
    });
    this.reopening = waking.finally(() => this.reopening = null);
    this.reopening.catch(() => {}); // its waiters see the failure; it is no unhandled rejection
    return waking;
  }

  call<T>(call: WorkerCall, options?: { timeoutMs?: number }): Promise<T> {
    const client = this.use();
    return client instanceof Promise
      ? client.then((c) => c.call<T>(call, options))
      : client.call<T>(call, options);
  }

  /**
   * Replaces the engine. `crashed`: it ended on its own; `stalled`: its thread does not come back, so it is fenced
   * and left to stop; `recycled`: it is idle and closes as usual.
   */
  private restart(reason: string, how: "crashed" | "stalled" | "recycled"): void {
    if (this.reopening || this.closed || !this.client) return;
    const old = this.client;
    this.restarting = true;
    this.lastRestart = { reason, at: new Date().toISOString() };
    log.warn("embedded database restarting", { database: this.name, reason });
    this.reopening = (async () => {
      if (how === "recycled") await old.close().catch(() => {});
      else old.fence(restarted(reason));
      if (how === "stalled") gaveUp(old.vitals);
      for (let attempt = 1; !this.closed; attempt++) {
        try {
          await this.start();
          break;
        } catch (err) {
          log.error("embedded database did not reopen", { database: this.name, attempt, cause: String(err) });
          await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * attempt)));
        }
      }
      this.restarts++;
    })().finally(() => {
      this.reopening = null;
      this.restarting = false;
    });
  }

  check(now: number): void {
    if (this.reopening || this.closed || !this.client) return;
    const { vitals } = this.client;
    if (vitals.lastBeat > 0 && now - vitals.lastBeat > pgliteLimits.stallMs) {
      this.restart(`no answer for ${Math.round((now - vitals.lastBeat) / 1000)} s`, "stalled");
    } else if (vitals.memoryBytes > pgliteLimits.recycleMemoryMb * 1024 * 1024 && this.client.idle) {
      this.restart(`memory grew to ${Math.round(vitals.memoryBytes / 1048576)} MB`, "recycled");
    } else if (
      this.options.closeWhenIdle && !this.askingDue && pgliteLimits.idleSecs > 0 && this.client.idle &&
      (now - this.client.lastActive >= pgliteLimits.idleSecs * 1000 || this.unusedSinceRestSoon(this.client))
    ) {
      this.restIfUnusedSince = null;
      this.rest(this.client);
    }
  }

  health(): InstanceHealth {
    return {
      name: this.name,
      state: this.restarting ? "restarting" : "ok",
      open: this.client !== null,
      memory_mb: Math.round((this.client?.vitals.memoryBytes ?? 0) / 1048576),
      restarts: this.restarts,
      last_restart: this.lastRestart,
    };
  }

  private subscribe(sub: Subscription): void {
    const client = this.client!;
    sub.client = client;
    sub.listener = client.listen(sub.channel, sub.onPayload);
    sub.listener.catch(() => {}); // an engine that fails meanwhile is replaced, and this one listens again
  }

  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    await this.use();
    const sub: Subscription = { channel, onPayload };
    this.subscriptions.add(sub);
    this.subscribe(sub);
    await sub.listener;
    return async () => {
      if (!this.subscriptions.delete(sub)) return;
      const listener = await sub.listener!.catch(() => undefined);
      if (listener !== undefined && sub.client === this.client) await sub.client.unlisten(listener);
    };
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
    // The whole transaction stays on one engine: if that one is replaced, its calls fail.
    const client = await this.use();
    const tx = await client.call<number>({ op: "begin" });
    client.openTransactions++;
    try {
      let result: T;
      try {
        const q = queryable(client, tx, options?.timeoutMs);
        if (options?.timeoutMs !== undefined) {
          await q.exec(`set local statement_timeout = ${Math.max(1, Math.floor(options.timeoutMs))}`);
        }
        result = await fn(q);
      } catch (err) {
        const ending = client.call({ op: "end", tx, commit: false, after: options?.after }).catch(() => {});
        // After a timeout the engine still runs the late statement; the rollback follows it, unawaited, so
        // that the caller has its answer now.
        if (sqlState(err) !== "57014") await ending;
        throw err;
      }
      await client.call({ op: "end", tx, commit: true, after: options?.after });
      return result;
    } finally {
      client.openTransactions--;
    }
  }

  pipeline(
    statements: PipelineStatement[],
    { end, readOnly = false, timeoutMs, isolation }: PipelineOptions,
  ) {
    const client = this.use();
    const run = (c: PgliteClient) =>
      typeof end === "function"
        ? c.decidedPipeline(statements, end, readOnly, timeoutMs, isolation)
        : c.call<Record<string, unknown>[][]>(
          { op: "pipeline", statements, end, readOnly, isolation },
          { timeoutMs },
        );
    return client instanceof Promise ? client.then(run) : run(client);
  }

  /** Closes the engine; one that does not finish within CLOSE_MS is given up (a stop must not hang). */
  async close(): Promise<void> {
    this.closed = true;
    unwatch(this);
    await this.reopening?.catch(() => {});
    const client = this.client; // none while it rests
    if (!client) return;
    this.client = null;
    const asked = this.options.closeWhenIdle?.restFile && pgliteLimits.idleSecs > 0 && client.idle &&
      !this.restarting;
    const dueAt = asked ? await valueWithin(this.askDue(client), DUE_ON_CLOSE_MS, 0) : 0;
    if (asked && dueAt === 0) {
      log.warn("embedded database: due work not read as it closed; the next start opens it to look", {
        database: this.name,
      });
    }
    // Late, the rest file is written without it: the next start reads the catalog.
    const memo = dueAt === 0
      ? undefined
      : await valueWithin(this.makeMemo(client), MEMO_ON_CLOSE_MS, undefined);
    if (await closeWithin(client, CLOSE_MS)) await this.rested(dueAt, memo);
  }
}

/** How long closing waits for the engine to say when its work falls due (not told: the next start opens it). */
const DUE_ON_CLOSE_MS = 5_000;
/** How long closing waits for the memo of the rest file (not made: the next start reads the database). */
const MEMO_ON_CLOSE_MS = 5_000;

/**
 * Closes an engine; one that does not finish within `ms` is given up (a stop must not hang). True when it
 * ended cleanly.
 */
async function closeWithin(client: PgliteClient, ms: number): Promise<boolean> {
  const ended = await valueWithin<boolean | "late">(client.close(), ms, "late");
  if (ended !== "late") return ended;
  client.fence(new Error("The embedded database is closed"));
  gaveUp(client.vitals);
  return false;
}

/**
 * Opens (creating when new) an embedded PGlite database in `dir`, on a thread of its own. One process may hold
 * a directory.
 */
export async function openPglite(dir: string, options: PgliteOptions = {}): Promise<EmbeddedDb> {
  await Deno.mkdir(dir, { recursive: true });
  await initPgliteDir(dir, pgliteSettings());
  const database = new EmbeddedDatabase(dir, options);
  await database.start();
  watch(database);
  return {
    kind: "pglite",
    query: <T>(sql: string, params: unknown[] = []) => database.call<T[]>({ op: "query", sql, params }),
    exec: (sql: string) => database.call<void>({ op: "exec", sql }),
    execRows: (sql: string) => database.call<Record<string, unknown>[]>({ op: "execRows", sql }),
    transaction: (fn, options) => database.transaction(fn, options),
    pipeline: (statements, options) => database.pipeline(statements, options),
    listen: (channel, onPayload) => database.listen(channel, onPayload),
    close: () => database.close(),
    isResting: (now) => database.isResting(now),
    wake: () => database.wakeEarly(),
    restSoon: () => database.restSoon(),
  };
}
