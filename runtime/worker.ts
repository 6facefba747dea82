/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * The bootstrap of a function's Web Worker (inside a runtime host). It installs the function's view of the
 * world (console to the log store, its own env_vars as Deno.env, no Deno.exit, Deno.serve captured), loads
 * the user module or compiles the wasm module, then answers request messages from the host.
 */
import { installEgress } from "./egress/worker_net.ts";
import { FrameReader, FrameWriter, readChunks } from "./frames.ts";
import { droppedLinesText, LogBudget } from "./log_budget.ts";
import {
  type HostToWorker,
  type InitMessage,
  type LogLevel,
  MAX_LOG_LINE,
  MAX_RESPONSE_BYTES,
  type PlatformToWorker,
  type RequestMessage,
  STREAM_WINDOW_BYTES,
  timeLimitText,
  WATCH,
  type WorkerInitMessage,
  type WorkerToHost,
  type WorkerToPlatform,
} from "./protocol.ts";
import { runWagi, WagiError } from "./wasm/wagi.ts";

type Handler = (req: Request, info: unknown) => Response | Promise<Response>;

// Captured before the user module loads: the function may replace the globals, not the worker's channel.
const connect = Deno.connect;
const revoke = Deno.permissions.revokeSync.bind(Deno.permissions);
const rawPost: (msg: WorkerToHost) => void = self.postMessage.bind(self);
const now = Date.now;
const atomicStore = Atomics.store;
const toBigInt = BigInt;
const every = setInterval;
const stopEvery = clearInterval;
const NotCapable = Deno.errors.NotCapable;
let writer: FrameWriter<WorkerToPlatform> | null = null;
/** Frames written before the connection is open (console lines of the bootstrap): sent once it is. */
const early: WorkerToPlatform[] = [];

function send(header: WorkerToPlatform, body: Uint8Array | null = null): void {
  if (writer) writer.write(header, body);
  else early.push(header);
}
const inspect = Deno.inspect;
let handler: Handler | null = null;
let wasm: { module: WebAssembly.Module; init: InitMessage } | null = null;

function format(args: unknown[]): string {
  const text = args.map((a) => typeof a === "string" ? a : inspect(a, { depth: 4 })).join(" ");
  return text.length > MAX_LOG_LINE ? text.slice(0, MAX_LOG_LINE) + "…" : text;
}

// Every console line and error report of the function passes through this budget (the function cannot reach the
// connection otherwise). A line over budget is not even formatted: formatting costs more than sending.
const logBudget = new LogBudget();

function sendLog(level: LogLevel, text: () => string): void {
  if (!logBudget.take()) return;
  reportDropped(false);
  send({ t: "log", level, text: text() });
}

/** Tells the log how many lines were dropped, if any (at most once a second unless `force`). */
function reportDropped(force: boolean): void {
  const dropped = logBudget.report(force);
  if (dropped > 0) send({ t: "log", level: "warn", text: droppedLinesText(dropped) });
}

function installConsole(): void {
  const levels: Record<string, LogLevel> = {
    debug: "debug",
    log: "info",
    info: "info",
    warn: "warn",
    error: "error",
    trace: "debug",
  };
  const shim: Record<string, unknown> = { ...console };
  for (const [method, level] of Object.entries(levels)) {
    shim[method] = (...args: unknown[]) => sendLog(level, () => format(args));
  }
  Object.defineProperty(globalThis, "console", { value: shim, writable: true, configurable: true });
}

function envShim(vars: Record<string, string>) {
  const map = new Map(Object.entries(vars));
  return {
    get: (key: string) => map.get(key),
    has: (key: string) => map.has(key),
    set: (key: string, value: string) => void map.set(key, String(value)),
    delete: (key: string) => void map.delete(key),
    toObject: () => Object.fromEntries(map),
  };
}

let served: Handler | null = null;

function serveShim(...args: unknown[]) {
  const [a, b] = args;
  const fn = typeof a === "function"
    ? a
    : typeof b === "function"
    ? b
    : (a as { handler?: unknown })?.handler;
  if (typeof fn !== "function") throw new TypeError("Deno.serve needs a handler function");
  served = fn as Handler;
  const finished = new Promise<void>(() => {});
  return {
    finished,
    addr: { transport: "tcp", hostname: "0.0.0.0", port: 0 },
    shutdown: () => Promise.resolve(),
    ref() {},
    unref() {},
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}

/**
 * Deno.stdout and Deno.stderr of a function: their lines go to its log, within the same budget as console's
 * (the host's own output is the platform's to read, and a flood of it would cost the platform).
 */
function outputShim(level: "info" | "error") {
  const decoder = new TextDecoder();
  // Each write's lines, a last one without a newline included (a later write does not complete it: nothing is
  // held back, so nothing written is lost when the call ends).
  const write = (bytes: Uint8Array): number => {
    for (const line of decoder.decode(bytes, { stream: true }).split("\n")) {
      if (line.trim()) sendLog(level, () => line.slice(0, MAX_LOG_LINE));
    }
    return bytes.byteLength;
  };
  return {
    rid: -1,
    write: (bytes: Uint8Array) => Promise.resolve(write(bytes)),
    writeSync: write,
    writable: new WritableStream<Uint8Array>({ write: (chunk) => void write(chunk) }),
    isTerminal: () => false,
    close() {},
  };
}

function refuse(what: string) {
  return () => {
    throw new Deno.errors.NotCapable(`${what} is not allowed in a function`);
  };
}

function installDeno(init: InitMessage): void {
  const define = (name: string, value: unknown) =>
    Object.defineProperty(Deno, name, { value, writable: false, configurable: false });
  define("env", envShim(init.env));
  define("exit", refuse("Deno.exit"));
  define("serve", serveShim);
  define("stdout", outputShim("info"));
  define("stderr", outputShim("error"));
  // A function answers through its handler only: it may not open servers of its own on the host.
  for (const name of ["listen", "listenTls", "listenDatagram"]) define(name, refuse(`Deno.${name}`));
  // Nor stop its own worker, which would leave the host's calls waiting.
  Object.defineProperty(self, "close", { value: refuse("close"), writable: false, configurable: false });
}

/** What a Worker class calls first (its `super()`): it throws before the class can start a thread. */
class NoThreads {
  constructor() {
    throw new NotCapable("Workers are not allowed in a function");
  }
}

/**
 * A function may start no thread: each one would be an isolate of its own, outside its host's watch. Both ways
 * to start one (Worker and node:worker_threads, whose constructors call `super()` before they start a thread)
 * get a base class that throws, and are frozen so that it stays; Deno's internals, which reach the runtime's
 * operations directly, are taken away. Started as the worker loads (node:worker_threads takes a few ms).
 */
const threadsRefused = import("node:worker_threads").then(({ Worker: NodeWorker }) => {
  for (const ctor of [Worker, NodeWorker]) {
    Object.setPrototypeOf(ctor, NoThreads);
    Object.freeze(ctor);
  }
  const internal = (Deno as unknown as { internal: symbol }).internal;
  Object.defineProperty(Deno, internal, { value: undefined, writable: false, configurable: false });
});

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return `Uncaught ${inspect(err)}`;
}

async function initDeno(init: WorkerInitMessage): Promise<void> {
  await threadsRefused;
  installConsole();
  installDeno(init);
  if (init.gate) installEgress(init.gate);
  const type = init.bundled ? "application/javascript" : "application/typescript";
  // A blob: URL, not a data: URL: every stack frame of the module names its URL, and Deno's stack formatting
  // handles that whole URL (its source-map lookup) per frame, so an error's `stack` through a data: URL (the
  // whole module in base64) cost ms per error (measured 4 ms through a 160 KB bundle; 0.14 ms from a blob).
  const url = URL.createObjectURL(new Blob([init.code], { type }));
  let mod;
  try {
    mod = await import(url);
  } finally {
    URL.revokeObjectURL(url); // the module is loaded: the blob's bytes need not stay
  }
  const def = mod.default;
  if (def && typeof def === "object" && typeof def.fetch === "function") handler = def.fetch.bind(def);
  else if (typeof def === "function") handler = def;
  else if (served) handler = served;
  else {
    throw new Error(
      "Function has no handler: use export default { fetch(req) }, export default (req) => Response, " +
        "or Deno.serve(handler)",
    );
  }
}

/**
 * The Request a handler gets. Its `signal` aborts when the call passes its time limit; it is made on first use
 * (a Request given a signal at construction costs a third more, on every call).
 */
class CallRequest extends Request {
  #controller: AbortController | null = null;

  override get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }

  /** Tells the handler, if it listens, that its call ran past the time limit. */
  timeOut(): void {
    this.#controller?.abort(new DOMException("The call ran past its time limit", "TimeoutError"));
  }
}

/** A call the worker holds: when it passes its time limit, and its request (wasm calls have none). */
interface Held {
  deadline: number;
  req: CallRequest | null;
  /** Cancels the answer's stream while it is sent (time limit, or the platform's cancel). */
  stop?: () => void;
}

/** Streamed answers being sent: bytes sent and bytes the platform passed on (acknowledged). */
interface Sending {
  sent: number;
  acked: number;
  /** Wakes the sender waiting for the platform to pass bytes on. */
  wake: (() => void) | null;
}
const sending = new Map<number, Sending>();

// Every call of a function has the same time limit, so the first call held (Map order) has the earliest deadline.
const held = new Map<number, Held>();
let timeoutMs = 0;
let limitText = "";
let watch: BigInt64Array | null = null;
let published = Infinity; // the deadline in watch[WATCH.deadline], so that most calls skip the atomic write
let watchdog: ReturnType<typeof setInterval> | null = null;
// One watchdog for every call instead of a timer each (timers cost a lot per call under load).
const WATCHDOG_MS = 50;
const NO_DEADLINE = 0x7fffffffffffffffn;

/** Shows the host the deadline of the oldest call held (none: MAX), so that it can tell a stuck worker. */
function publishEarliest(): void {
  const first = held.values().next().value;
  const deadline = first?.deadline ?? Infinity;
  if (deadline === published) return;
  published = deadline;
  atomicStore(watch!, WATCH.deadline, first ? toBigInt(deadline) : NO_DEADLINE);
}

function hold(id: number): Held {
  const call: Held = { deadline: now() + timeoutMs, req: null };
  held.set(id, call);
  if (held.size === 1) {
    publishEarliest();
    atomicStore(watch!, WATCH.heartbeat, toBigInt(now()));
    // Kept between bursts of calls (it stops itself once it finds none): a timer made and cleared per burst
    // costs more than the ticks it saves.
    watchdog ??= every(checkDeadlines, WATCHDOG_MS);
  }
  return call;
}

/** Drops a call; false when it was already answered (or failed at its time limit). */
function release(id: number): boolean {
  const call = held.get(id);
  if (call === undefined) return false;
  // Emptied as it leaves: a Map keeps removed values in its replaced tables until they are collected, and one
  // promoted to the old generation would promote the request it still held (see HostProcess.settle).
  call.req = null;
  held.delete(id);
  // The earliest deadline may leave with its call: a long synchronous call after it must not look stuck.
  publishEarliest();
  return true;
}

/** Fails the calls past their time limit (their handlers are told through req.signal). */
function checkDeadlines(): void {
  if (held.size === 0) {
    stopEvery(watchdog!);
    watchdog = null;
    return;
  }
  const t = now();
  atomicStore(watch!, WATCH.heartbeat, toBigInt(t));
  for (const [id, call] of held) {
    if (call.deadline > t) break; // the rest are later
    call.req?.timeOut();
    call.stop?.();
    if (release(id)) send({ t: "fail", id, outcome: "timeout", message: limitText, logs: [] });
  }
}

/** The pairs of `headers` (forEach: the same pairs as iterating, a fifth of the cost). */
function headerList(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  headers.forEach((value, name) => out.push([name, value]));
  return out;
}

/** One frozen init per method: Request converts an init it has seen before for less (measured: 0.3–0.9 µs of ~3). */
const inits = new Map<string, RequestInit>();
function initOf(method: string): RequestInit {
  let init = inits.get(method);
  if (!init) {
    init = Object.freeze({ method });
    if (inits.size < 16) inits.set(method, init);
  }
  return init;
}

/** What a handler gets as its second argument (as under Deno.serve): the same for every call, frozen. */
const SERVE_INFO = Object.freeze({
  remoteAddr: Object.freeze({ transport: "tcp", hostname: "0.0.0.0", port: 0 }),
  completed: Promise.resolve(),
});

async function serveDeno(msg: RequestMessage, body: Uint8Array | null): Promise<void> {
  const call = hold(msg.id);
  try {
    const hasBody = body && msg.method !== "GET" && msg.method !== "HEAD";
    const req = call.req = new CallRequest(
      msg.url,
      hasBody ? { method: msg.method, body: body as Uint8Array<ArrayBuffer> } : initOf(msg.method),
    );
    // Set one by one rather than given in the init, which converts a header list for more (the names are unique).
    for (const [name, value] of msg.headers) req.headers.set(name, value);
    const res = await handler!(req, SERVE_INFO);
    if (!(res instanceof Response)) {
      throw new TypeError(`Handler returned ${res === null ? "null" : typeof res}, not a Response`);
    }
    if (msg.stream && res.body && !NULL_BODY.has(res.status)) return await streamAnswer(msg.id, call, res);
    const out = await res.bytes();
    if (out.byteLength > MAX_RESPONSE_BYTES) {
      throw new RangeError(`Response is larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    if (release(msg.id)) {
      reportDropped(true); // a flood within a call shows in the log with the call
      send({ t: "res", id: msg.id, status: res.status, headers: headerList(res.headers), logs: [] }, out);
    }
  } catch (err) {
    if (!release(msg.id)) return; // already failed at its time limit
    sendLog("error", () => format([err]));
    reportDropped(true);
    send({ t: "fail", id: msg.id, outcome: "error", message: describe(err), logs: [] });
  }
}

const NULL_BODY = new Set([101, 204, 205, 304]);

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Sends an answer as the function writes it. Bytes read before the end of this turn of the event loop leave
 * with the `res` frame, so an answer complete at once goes whole as before; later bytes go as `chunk` frames,
 * then `end`. At most STREAM_WINDOW_BYTES may be unacknowledged by the platform: past them the worker reads no
 * more of the function's stream (its backpressure reaches the function). The time limit covers the whole stream.
 */
async function streamAnswer(id: number, call: Held, res: Response): Promise<void> {
  const reader = res.body!.getReader();
  const state: Sending = { sent: 0, acked: 0, wake: null };
  let stopped = false;
  call.stop = () => {
    stopped = true;
    reader.cancel(new DOMException("The answer's stream was cancelled", "AbortError")).catch(() => {});
    state.wake?.();
  };
  sending.set(id, state);
  const parts: Uint8Array[] = [];
  let size = 0;
  let total = 0;
  let head = false;
  let done = false;
  const sendHead = () => {
    if (head || done || stopped) return;
    head = true;
    const body = parts.length === 0 ? null : concat(parts, size);
    parts.length = 0;
    state.sent += size;
    size = 0;
    send(
      { t: "res", id, status: res.status, headers: headerList(res.headers), logs: [], stream: true },
      body,
    );
  };
  const timer = setImmediate(sendHead);
  try {
    for (;;) {
      while (!stopped && state.sent + size - state.acked >= STREAM_WINDOW_BYTES) {
        await new Promise<void>((resolve) => state.wake = resolve);
        state.wake = null;
      }
      if (stopped) return;
      const r = await reader.read();
      if (stopped) return;
      if (r.done) break;
      const bytes = r.value as unknown;
      if (!(bytes instanceof Uint8Array)) throw new TypeError("Response body chunks must be Uint8Array");
      total += bytes.byteLength;
      if (total > MAX_RESPONSE_BYTES) {
        throw new RangeError(`Response is larger than ${MAX_RESPONSE_BYTES} bytes`);
      }
      if (bytes.byteLength === 0) continue;
      if (!head) {
        parts.push(bytes.slice());
        size += bytes.byteLength;
      } else {
        state.sent += bytes.byteLength;
        send({ t: "chunk", id }, bytes.slice());
      }
    }
    done = true;
    if (!release(id)) return;
    reportDropped(true);
    if (head) send({ t: "end", id });
    else {send(
        { t: "res", id, status: res.status, headers: headerList(res.headers), logs: [] },
        concat(parts, size),
      );}
  } catch (err) {
    done = true;
    if (!stopped) reader.cancel(err).catch(() => {});
    throw err;
  } finally {
    clearImmediate(timer);
    sending.delete(id);
  }
}

/** A frame about a streamed answer: the platform passed bytes on, or gave the answer up. */
function onStreamFrame(msg: PlatformToWorker): void {
  if (msg.t === "ack") {
    const state = sending.get(msg.id);
    if (!state) return;
    state.acked += msg.bytes;
    state.wake?.();
  } else if (msg.t === "cancel") {
    const call = held.get(msg.id);
    call?.stop?.();
    release(msg.id);
  }
}

function serveWasm(msg: RequestMessage, body: Uint8Array | null): void {
  const { module, init } = wasm!;
  hold(msg.id);
  try {
    const res = runWagi(module, { ...msg, body, env: init.env, name: init.name }, MAX_RESPONSE_BYTES);
    if (release(msg.id)) {
      send({ t: "res", id: msg.id, status: res.status, headers: res.headers, logs: res.logs }, res.body);
    }
  } catch (err) {
    const logs = err instanceof WagiError ? err.logs : [];
    if (release(msg.id)) send({ t: "fail", id: msg.id, outcome: "error", message: describe(err), logs });
  }
}

self.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  sendLog("error", () => `Unhandled rejection: ${format([e.reason])}`);
});

/**
 * Opens the worker's connection to the platform, then gives up every permission on the socket, before any
 * code of the function runs: the function cannot open another connection, only answer on this one.
 */
async function openChannel(init: WorkerInitMessage): Promise<Deno.Conn> {
  const conn = await connect({ transport: "unix", path: init.socket });
  revoke({ name: "net", host: `unix:${init.socket}` } as Deno.NetPermissionDescriptor);
  revoke({ name: "read", path: init.socket });
  revoke({ name: "write", path: init.socket });
  writer = new FrameWriter(conn, () => rawPost({ t: "closed" }));
  for (const header of early.splice(0)) writer.write(header);
  return conn;
}

/** Answers the calls of its connection until the platform closes it. */
async function serve(conn: Deno.Conn, initError: string | null): Promise<void> {
  const reader = new FrameReader<PlatformToWorker>();
  for await (const chunk of readChunks(conn)) {
    let frames;
    try {
      frames = reader.push(chunk);
    } catch {
      break;
    }
    for (const { header, body } of frames) {
      if (header.t !== "req") {
        onStreamFrame(header);
        continue;
      }
      const msg = header;
      if (initError !== null) send({ t: "fail", id: msg.id, outcome: "error", message: initError, logs: [] });
      else if (wasm) serveWasm(msg, body);
      else serveDeno(msg, body);
    }
  }
  rawPost({ t: "closed" });
}

self.onmessage = async (e: MessageEvent<HostToWorker>) => {
  const init = e.data;
  if (init.t !== "init") return;
  self.onmessage = null;
  timeoutMs = init.timeoutMs;
  limitText = timeLimitText(init.timeoutMs);
  watch = new BigInt64Array(init.watch);
  let conn: Deno.Conn;
  try {
    conn = await openChannel(init);
  } catch {
    rawPost({ t: "closed" }); // the host replaces a worker that cannot reach the platform
    return;
  }
  let initError: string | null = init.failure ?? null;
  if (initError === null) {
    try {
      if (init.kind === "wasm") wasm = { module: init.module!, init };
      else await initDeno(init);
    } catch (err) {
      initError = describe(err);
    }
  }
  send(
    initError === null
      ? { t: "ready", generation: init.generation }
      : { t: "init_error", generation: init.generation, message: initError },
  );
  await serve(conn, initError);
};
