/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * The thread of one embedded PGlite database. The engine is WebAssembly that runs each call to completion on
 * the thread that makes it: here it has a thread of its own, so that the platform's event loop (HTTP, auth,
 * query compiling) runs beside it instead of waiting for every statement. Answers the calls of db/pglite.ts.
 */
import { PGlite, type Transaction, types } from "@electric-sql/pglite";
import { quoteIdent } from "./driver.ts";
import { engineExtensions } from "./pglite_engine_extensions.ts";
import { pglitePipeline } from "./pglite_pipeline.ts";
import { startParams } from "./pglite_start.ts";
import { restCollector } from "../lib/rest_gc.ts";
import {
  type SerializedError,
  serializeError,
  statementTimeout,
  TimeoutGate,
  Vitals,
  type WorkerMessage,
  type WorkerRequest,
} from "./pglite_protocol.ts";

/** How long without a call before this thread's heap is collected. */
const REST_GC_MS = 10_000;
/** How often this thread's event loop says it runs (the platform's stall detector reads it). */
const BEAT_MS = 250;
/** The engine's imports that reach files and the clock: where a fenced thread stops. */
const GUARDED_IMPORT = /^(fd_|__syscall_|clock_|emscripten_date_now$|emscripten_get_now$)/;

let vitals = new Vitals();

let pg: PGlite | undefined;
let gate = new TimeoutGate();
let pipeline: ReturnType<typeof pglitePipeline> | undefined;
let nextId = 1;
/** Open transactions: the engine's transaction object and how to end it. */
const transactions = new Map<
  number,
  { tx: Transaction; end: (ending: Ending) => void; done: Promise<void> }
>();
/** Pipelines waiting for the caller's decision. */
const decisions = new Map<number, (decision: "commit" | "rollback") => void>();
/** The listeners of each channel this session LISTENs to. */
const channels = new Map<string, Set<number>>();
/** The channel of each listener. */
const listeners = new Map<number, string>();

/**
 * Ends this thread once the platform has fenced it (it gave up on a call that did not end and opened the
 * directory anew): self.close() ends even code that is running, at its next call or loop, and nothing can catch
 * it, so a fenced engine never writes a file again.
 */
function stopIfFenced(): void {
  if (!vitals.fenced) return;
  vitals.stopped();
  self.close();
  throw new Error("The embedded database was stopped");
}

/**
 * Caps the WebAssembly memories created on this thread at `maxBytes`: PGlite asks for 2 GiB at most, and memory
 * once grown is never given back, so one statement could keep that much. Past the cap a growth fails, which
 * PostgreSQL answers as "out of memory" (53200), and the engine goes on.
 */
function capMemory(maxBytes: number): void {
  const Native = WebAssembly.Memory;
  const maxPages = Math.floor(maxBytes / 65536);
  class Capped extends Native {
    constructor(descriptor: WebAssembly.MemoryDescriptor) {
      const maximum = Math.max(descriptor.initial, Math.min(descriptor.maximum ?? maxPages, maxPages));
      super({ ...descriptor, maximum });
    }
  }
  Object.defineProperty(WebAssembly, "Memory", { value: Capped, writable: true, configurable: true });
}

/** Puts {@linkcode stopIfFenced} in front of the engine's file and clock imports. */
function fenceImports(): void {
  const instantiate = WebAssembly.instantiate;
  const done = new WeakSet<object>();
  const guarded = (imports?: WebAssembly.Imports) => {
    for (const name of ["env", "wasi_snapshot_preview1"]) {
      const table = imports?.[name] as Record<string, unknown> | undefined;
      if (!table || done.has(table)) continue;
      done.add(table);
      for (const [key, fn] of Object.entries(table)) {
        if (typeof fn !== "function" || !GUARDED_IMPORT.test(key)) continue;
        const wrapper = function (this: unknown, ...args: unknown[]) {
          stopIfFenced();
          return fn.apply(this, args);
        };
        // Emscripten's dynamic linking reads an import's signature from the function.
        table[key] = Object.assign(wrapper, { sig: (fn as { sig?: string }).sig });
      }
    }
    return imports;
  };
  Object.defineProperty(WebAssembly, "instantiate", {
    value: (source: never, imports?: WebAssembly.Imports) => instantiate(source, guarded(imports)),
    writable: true,
    configurable: true,
  });
}

/**
 * Watches the engine's main loop. PGlite catches every exception there and goes on, but a JavaScript stack
 * overflow (input nested some thousands of levels deep) or a WebAssembly trap leaves PostgreSQL's state half
 * unwound (locks held, memory contexts not reset): the rest of the batch would run on it (a COMMIT included),
 * and a later statement spins forever. So this thread ends on the spot, as a crashed server would, and tells
 * the platform, which opens the directory anew (recovery replays the write-ahead log: what was committed stays).
 */
function watchEngine(engine: PGlite): void {
  const mod = (engine as unknown as { mod: Record<string, () => void> }).mod;
  const once = mod._PostgresMainLoopOnce!;
  mod._PostgresMainLoopOnce = () => {
    try {
      once();
    } catch (err) {
      if (err instanceof RangeError || err instanceof WebAssembly.RuntimeError) {
        const deep = err instanceof RangeError && /call stack/i.test(err.message);
        const error: SerializedError = {
          name: "DatabaseError",
          message: deep ? "stack depth limit exceeded" : "the embedded database failed",
          fields: { code: deep ? "54001" : "XX000", severity: "ERROR" },
        };
        send({ broken: error });
        vitals.fence();
        stopIfFenced();
      }
      throw err;
    }
  };
}

/** Passes a notification to the listeners of its channel, whichever path it came by. */
function notify(channel: string, payload: string): void {
  for (const listener of channels.get(channel) ?? []) send({ listener, payload });
}

function send(message: WorkerMessage): void {
  self.postMessage(message);
}

function engine(): PGlite {
  if (!pg) throw new Error("The embedded database is not open");
  return pg;
}

function target(tx: number | undefined): PGlite | Transaction {
  if (tx === undefined) return engine();
  const open = transactions.get(tx);
  if (!open) throw new Error("The transaction is closed");
  return open.tx;
}

/** The fields of the error that fails the calls of an engine given up on. */
const BROKEN = { code: "XX000", severity: "ERROR" };

/** How an `end` call ends a transaction: commit or roll back, then `after` (TransactionOptions.after). */
interface Ending {
  /** The `end` call's id. */
  id: number;
  commit: boolean;
  after?: string;
}

/** Starts a transaction and answers `id` once it is open; it ends on an `end` call. */
function begin(id: number): void {
  const tx = nextId++;
  let started = false;
  let end!: (ending: Ending) => void;
  const ended = new Promise<Ending>((resolve) => end = resolve);
  const done = engine().transaction(async (t) => {
    transactions.set(tx, { tx: t, end, done });
    started = true;
    send({ id, ok: true, value: tx });
    const ending = await ended;
    const { commit, after } = ending;
    if (after === undefined) {
      if (!commit) await t.rollback();
      return;
    }
    // `after` must run before PGlite's lock lets another call in, so the transaction is ended here by SQL, inside
    // the callback (PGlite's own COMMIT then finds none open: a warning), and `after` runs whatever the end did.
    let failure: unknown;
    await t.exec(commit ? "commit" : "rollback").catch((err) => failure = err);
    try {
      await t.exec(after);
    } catch {
      // The session could not be put back: what the caller's SQL left on it would reach the next statement. The
      // engine is given up on before PGlite's lock lets another call in, and opened anew (a fresh session), as
      // after a crash; the end is answered as it went (as on PostgreSQL, where the connection is dropped), once
      // the platform has begun the restart, so that the caller's next call goes to the new engine.
      send({
        broken: { name: "DatabaseError", message: "the session could not be reset", fields: BROKEN },
        last: failure
          ? { id: ending.id, ok: false, error: serializeError(failure) }
          : { id: ending.id, ok: true, value: null },
      });
      vitals.fence();
      stopIfFenced();
    }
    if (failure) throw failure;
  });
  done.catch((err) => {
    if (!started) send({ id, ok: false, error: serializeError(err) });
  });
}

/** A watched call starts running in the engine: its timeout counts from now. */
function started(id: number): void {
  gate.start(id);
  send({ started: id });
}

async function answer(req: WorkerRequest): Promise<unknown> {
  switch (req.op) {
    case "open": {
      vitals = new Vitals(req.vitals);
      capMemory(req.maxMemoryBytes);
      fenceImports();
      // int8 as a string, as postgres.js returns it: the same SQL gives the same JSON on both drivers.
      // pgvector and the contrib modules are there, so that `create extension` works as on a server that has them.
      pg = await PGlite.create(req.dir, {
        parsers: { [types.INT8]: (value: string) => value },
        extensions: engineExtensions(req.extensions),
        startParams: startParams(req.settings),
        pgliteWasmModule: req.module,
      });
      // This thread's copy of the extensions' bytes (4.5 MB) is written into the engine: let it be collected.
      req.extensions?.splice(0);
      watchEngine(pg);
      // The engine's heap as Emscripten sees it (it replaces the view whenever the memory grows).
      const heap = (pg as unknown as { mod: { HEAPU8: Uint8Array } }).mod;
      const beat = () => vitals.beat(heap.HEAPU8.byteLength);
      beat();
      setInterval(beat, BEAT_MS);
      // Notifications come with the answers of PGlite's own calls (it passes them here) and with those of
      // pipelines, which it does not read (the pipeline passes them).
      pg.onNotification(notify);
      pipeline = pglitePipeline(pg, { onNotification: notify, maxPrepared: req.maxPrepared });
      gate = new TimeoutGate(req.gate);
      return null;
    }
    case "query":
    case "exec":
    case "execRows": {
      const on = target(req.tx);
      // A watched call inside a transaction: the transaction holds the engine, so it starts now. When its
      // timeout fires first, the platform answers 57014 and ends the transaction with a rollback.
      const watched = req.watch && req.tx !== undefined;
      if (watched) started(req.id);
      try {
        if (req.op === "query") return (await on.query(req.sql, req.params)).rows;
        const results = await on.exec(req.sql);
        return req.op === "exec" ? null : results.findLast((r) => r.fields.length > 0)?.rows ?? [];
      } finally {
        if (watched) gate.finish(req.id);
      }
    }
    case "end": {
      const open = transactions.get(req.tx);
      if (!open) throw new Error("The transaction is closed");
      transactions.delete(req.tx);
      open.end({ id: req.id, commit: req.commit, after: req.after });
      await open.done;
      return null;
    }
    case "pipeline": {
      if (!pipeline) throw new Error("The embedded database is not open");
      const { id, watch } = req;
      /** Whether the statements ended within the timeout: past it, the platform has answered 57014. */
      const inTime = () => {
        if (watch && !gate.finish(id)) throw statementTimeout();
      };
      let end: Parameters<typeof pipeline>[1]["end"] = req.end === "decide"
        ? (rows: Record<string, unknown>[][]) => {
          inTime();
          return new Promise<"commit" | "rollback">((resolve) => {
            decisions.set(id, resolve);
            send({ rows: id, value: rows });
          });
        }
        : req.end;
      // A watched write commits only once the gate says it ended in time (a second call into the engine);
      // reads and rollbacks keep nothing, so their answer is merely dropped when late.
      if (watch && end === "commit" && !req.readOnly) {
        end = () => {
          inTime();
          return "commit";
        };
      }
      const onStart = watch ? () => started(id) : undefined;
      try {
        return await pipeline(req.statements, {
          end,
          readOnly: req.readOnly,
          isolation: req.isolation,
          onStart,
        });
      } finally {
        if (watch) gate.finish(id);
      }
    }
    case "listen": {
      const listener = nextId++;
      let set = channels.get(req.channel);
      if (!set) {
        await engine().exec(`listen ${quoteIdent(req.channel)}`);
        set = channels.get(req.channel) ?? new Set();
        channels.set(req.channel, set);
      }
      set.add(listener);
      listeners.set(listener, req.channel);
      return listener;
    }
    case "unlisten": {
      const channel = listeners.get(req.listener);
      listeners.delete(req.listener);
      const set = channel === undefined ? undefined : channels.get(channel);
      if (!set || !set.delete(req.listener) || set.size > 0) return null;
      channels.delete(channel!);
      await engine().exec(`unlisten ${quoteIdent(channel!)}`);
      return null;
    }
    case "close":
      await pg?.close();
      return null;
    case "begin":
    case "decide":
      throw new Error("unreachable");
  }
}

/**
 * The engine's JavaScript garbage goes back once the database rests (lib/rest_gc.ts). A resting project's engine
 * still answers a few statements a second (change capture, the workers' rounds): that is rest too.
 */
const rest = restCollector(REST_GC_MS, {
  quietTouches: REST_GC_MS / 500,
  // This thread has no FFI: the platform trims malloc's arenas (they are the process's) when asked.
  trim: () => send({ trim: true }),
});

self.onmessage = (e: MessageEvent<WorkerRequest>) => {
  const req = e.data;
  rest.touch();
  if (req.op === "begin") return begin(req.id);
  if (req.op === "decide") {
    // Unanswered: the pipeline's own answer follows.
    decisions.get(req.pipeline)?.(req.decision);
    decisions.delete(req.pipeline);
    return;
  }
  answer(req).then(
    (value) => send({ id: req.id, ok: true, value }),
    (err) => send({ id: req.id, ok: false, error: serializeError(err) }),
  );
};
