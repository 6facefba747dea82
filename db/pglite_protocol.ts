import type { IsolationLevel, PipelineStatement } from "./driver.ts";
import type { ExtensionFile } from "./pglite_extensions.ts";

/**
 * A call from the platform to its PGlite worker; `tx` runs it inside that open transaction. `watch`: the call has
 * a statement timeout, decided through the gate (see db/pglite.ts): the worker says when it starts running in
 * the engine (a `started` message).
 */
export type WorkerCall =
  | {
    op: "open";
    dir: string;
    gate: SharedArrayBuffer;
    vitals: SharedArrayBuffer;
    maxPrepared?: number;
    /** The most the engine's WebAssembly memory may grow to. */
    maxMemoryBytes: number;
    /** Server settings the engine starts with (`-c name=value`), over PGlite's own start parameters. */
    settings: Record<string, string>;
    /** PGlite's WebAssembly, compiled once for the process (db/pglite_threads.ts); unset: compiled here. */
    module?: WebAssembly.Module;
    /** The extensions' files, shared (db/pglite_extensions.ts); unset: PGlite's own pgvector loads itself. */
    extensions?: ExtensionFile[];
  }
  | { op: "query"; tx?: number; sql: string; params: unknown[]; watch?: boolean }
  | { op: "exec"; tx?: number; sql: string; watch?: boolean }
  | { op: "execRows"; tx?: number; sql: string; watch?: boolean }
  | { op: "begin" }
  | { op: "end"; tx: number; commit: boolean; after?: string }
  /** `end: "decide"`: the worker sends the rows (a `rows` event) and waits for a `decide` call. */
  | {
    op: "pipeline";
    statements: PipelineStatement[];
    end: "commit" | "rollback" | "decide";
    readOnly: boolean;
    isolation?: IsolationLevel;
    watch?: boolean;
  }
  | { op: "decide"; pipeline: number; decision: "commit" | "rollback" }
  | { op: "listen"; channel: string }
  | { op: "unlisten"; listener: number }
  | { op: "close" };

/** A call with the id its answer carries. */
export type WorkerRequest = WorkerCall & { id: number };

/**
 * What the worker sends: an answer to a call, a pipeline's rows awaiting a decision, a notification, that a
 * watched call started running in the engine, or that the engine broke (its state can no longer be trusted).
 */
export type WorkerMessage =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { rows: number; value: Record<string, unknown>[][] }
  | { listener: number; payload: string }
  | { started: number }
  | { trim: true }
  /** The engine is given up on; `last` answers one call, settled only after the restart began. */
  | {
    broken: SerializedError;
    last?: { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };
  };

/**
 * What the platform sees of an engine's thread without asking it, over shared memory: when its event loop last
 * ran (it stops while a call runs in the engine, so an old beat means a call that does not end), the size of the
 * engine's WebAssembly memory, and a fence the platform raises to stop the thread at its next contact with the
 * outside (a file, the clock) once it gave up on it.
 */
export class Vitals {
  private readonly numbers: Float64Array;
  private readonly flags: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(24)) {
    this.numbers = new Float64Array(buffer, 0, 2);
    this.flags = new Int32Array(buffer, 16, 2);
  }

  /** The worker: its event loop runs now; `memoryBytes`: the engine's memory size. */
  beat(memoryBytes: number): void {
    this.numbers[0] = Date.now();
    this.numbers[1] = memoryBytes;
  }

  /** When the thread's event loop last ran (ms since the epoch). */
  get lastBeat(): number {
    return this.numbers[0]!;
  }

  get memoryBytes(): number {
    return this.numbers[1]!;
  }

  /** The platform: the thread must stop before it touches anything again. */
  fence(): void {
    Atomics.store(this.flags, 0, 1);
  }

  get fenced(): boolean {
    return Atomics.load(this.flags, 0) === 1;
  }

  /** The worker: the fenced thread is stopping. */
  stopped(): void {
    Atomics.store(this.flags, 1, 1);
  }

  get hasStopped(): boolean {
    return Atomics.load(this.flags, 1) === 1;
  }
}

/**
 * The statement-timeout gate of one engine, an Int32Array over a SharedArrayBuffer: the id of the watched call
 * running in the engine. Whoever takes a call's id out of it first decides that call: the worker (the call
 * ended in time: 0) or the platform (its timeout fired: -id, the worker then rolls back). One watched call runs
 * at a time: the engine runs one call at a time.
 */
export class TimeoutGate {
  private readonly cell: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(4)) {
    this.cell = new Int32Array(buffer);
  }

  /** The worker: call `id` starts running. */
  start(id: number): void {
    Atomics.store(this.cell, 0, id);
  }

  /** The worker: call `id` is done; true when it was in time (its outcome stands). */
  finish(id: number): boolean {
    return Atomics.compareExchange(this.cell, 0, id, 0) === id;
  }

  /** The platform: call `id` ran out of time; true when it still ran (it now fails with 57014). */
  expire(id: number): boolean {
    return Atomics.compareExchange(this.cell, 0, id, -id) === id;
  }
}

/** The error PostgreSQL raises when `statement_timeout` cancels a statement: callers map both the same way. */
export function statementTimeout(): Error {
  return Object.assign(new Error("canceling statement due to statement timeout"), {
    name: "DatabaseError",
    severity: "ERROR",
    code: "57014",
  });
}

/** A database error across the thread boundary: structured clone keeps an Error's message, not its fields. */
export interface SerializedError {
  name: string;
  message: string;
  /** SQLSTATE `code`, `detail`, `hint`, `routine`, …: the error's own primitive fields. */
  fields: Record<string, string | number | boolean | null>;
}

/** The fields of `err` that survive the trip (never the stack: it names the worker's own files). */
export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: "Error", message: String(err), fields: {} };
  const fields: SerializedError["fields"] = {};
  for (const [key, value] of Object.entries(err)) {
    if (key === "stack" || key === "message" || key === "name") continue;
    if (value === null || ["string", "number", "boolean"].includes(typeof value)) {
      fields[key] = value as string | number | boolean | null;
    }
  }
  return { name: err.name, message: err.message, fields };
}

/**
 * The error as the caller's thread sees it: an Error with the same message, name and fields. What an engine's
 * thread sends is not trusted (code that escaped its engine could send anything): message and name are strings,
 * and only primitive fields that shadow nothing of an Error (`__proto__`, `toString`, `stack`…) are kept.
 */
export function deserializeError(e: SerializedError): Error {
  const err = new Error(String(e?.message));
  err.name = String(e?.name);
  for (const [key, value] of Object.entries(e?.fields ?? {})) {
    if (key === "__proto__" || key === "stack" || key in err) continue;
    if (value === null || ["string", "number", "boolean"].includes(typeof value)) {
      Object.defineProperty(err, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return err;
}
