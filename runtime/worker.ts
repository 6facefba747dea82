/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * The bootstrap of a function's Web Worker (inside a runtime host). It installs the function's view of the
 * world (console to the log store, its own env_vars as Deno.env, no Deno.exit, Deno.serve captured), loads
 * the user module or compiles the wasm module, then answers request messages from the host.
 */
import { installEgress } from "./egress/worker_net.ts";
import {
  type InitMessage,
  MAX_LOG_LINE,
  MAX_RESPONSE_BYTES,
  type RequestMessage,
  type WorkerInitMessage,
} from "./protocol.ts";
import { runWagi, WagiError } from "./wasm/wagi.ts";

type Handler = (req: Request, info: unknown) => Response | Promise<Response>;

// Captured before the user module loads: the function may replace the globals, not the host's channel.
const rawPost = self.postMessage.bind(self);
const atTurnEnd = setImmediate;
let outbox: unknown[] = [];
let transfers: Transferable[] = [];
let flushing = false;

/**
 * Queues a message to the host; the messages of one event-loop turn travel in one postMessage at its end
 * (setImmediate), so that the answers to a batch of calls wake the host once.
 */
function post(msg: unknown, transfer?: Transferable): void {
  outbox.push(msg);
  if (transfer) transfers.push(transfer);
  if (flushing) return;
  flushing = true;
  atTurnEnd(flush);
}

function flush(): void {
  const msgs = outbox;
  const list = transfers;
  outbox = [];
  transfers = [];
  flushing = false;
  rawPost({ t: "batch", msgs }, list);
}
const inspect = Deno.inspect;
const controllers = new Map<number, AbortController>();
let handler: Handler | null = null;
let wasm: { module: WebAssembly.Module; init: InitMessage } | null = null;

function format(args: unknown[]): string {
  const text = args.map((a) => typeof a === "string" ? a : inspect(a, { depth: 4 })).join(" ");
  return text.length > MAX_LOG_LINE ? text.slice(0, MAX_LOG_LINE) + "…" : text;
}

function installConsole(): void {
  const levels = { debug: "debug", log: "info", info: "info", warn: "warn", error: "error", trace: "debug" };
  const shim: Record<string, unknown> = { ...console };
  for (const [method, level] of Object.entries(levels)) {
    shim[method] = (...args: unknown[]) => post({ t: "log", level, text: format(args) });
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
  // A function answers through its handler only: it may not open servers of its own on the host.
  for (const name of ["listen", "listenTls", "listenDatagram"]) define(name, refuse(`Deno.${name}`));
  // Nor stop its own worker, which would leave the host's calls waiting.
  Object.defineProperty(self, "close", { value: refuse("close"), writable: false, configurable: false });
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return `Uncaught ${inspect(err)}`;
}

async function initDeno(init: WorkerInitMessage): Promise<void> {
  installConsole();
  installDeno(init);
  if (init.gate) installEgress(init.gate);
  const url = `data:application/typescript;base64,${toBase64(new TextEncoder().encode(init.code))}`;
  const mod = await import(url);
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

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

async function serveDeno(msg: RequestMessage, body: Uint8Array | null): Promise<void> {
  const controller = new AbortController();
  controllers.set(msg.id, controller);
  try {
    const hasBody = body && msg.method !== "GET" && msg.method !== "HEAD";
    const req = new Request(msg.url, {
      method: msg.method,
      headers: msg.headers,
      body: hasBody ? body as Uint8Array<ArrayBuffer> : undefined,
      signal: controller.signal,
    });
    const info = {
      remoteAddr: { transport: "tcp", hostname: "0.0.0.0", port: 0 },
      completed: Promise.resolve(),
    };
    const res = await handler!(req, info);
    if (!(res instanceof Response)) {
      throw new TypeError(`Handler returned ${res === null ? "null" : typeof res}, not a Response`);
    }
    const out = new Uint8Array(await res.arrayBuffer());
    if (out.byteLength > MAX_RESPONSE_BYTES) {
      throw new RangeError(`Response is larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    post(
      { t: "res", id: msg.id, status: res.status, headers: [...res.headers], logs: [], body: out },
      out.buffer,
    );
  } catch (err) {
    post({ t: "log", level: "error", text: format([err]) });
    post({ t: "fail", id: msg.id, outcome: "error", message: describe(err), logs: [] });
  } finally {
    controllers.delete(msg.id);
  }
}

function serveWasm(msg: RequestMessage, body: Uint8Array | null): void {
  const { module, init } = wasm!;
  try {
    const res = runWagi(module, { ...msg, body, env: init.env, name: init.name }, MAX_RESPONSE_BYTES);
    const out = res.body.slice();
    post(
      { t: "res", id: msg.id, status: res.status, headers: res.headers, logs: res.logs, body: out },
      out.buffer,
    );
  } catch (err) {
    const logs = err instanceof WagiError ? err.logs : [];
    post({ t: "fail", id: msg.id, outcome: "error", message: describe(err), logs });
  }
}

self.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  post({ t: "log", level: "error", text: `Unhandled rejection: ${format([e.reason])}` });
});

self.onmessage = async (e: MessageEvent) => {
  const msg = e.data;
  if (msg.t === "batch") {
    for (const req of msg.reqs as (RequestMessage & { body: Uint8Array | null })[]) {
      if (wasm) serveWasm(req, req.body);
      else serveDeno(req, req.body);
    }
  } else if (msg.t === "ping") {
    rawPost({ t: "pong" });
  } else if (msg.t === "cancel") {
    controllers.get(msg.id)?.abort(new DOMException("The call ran past its time limit", "TimeoutError"));
  } else if (msg.t === "init") {
    try {
      if (msg.kind === "wasm") wasm = { module: msg.module, init: msg };
      else await initDeno(msg);
      post({ t: "ready" });
    } catch (err) {
      post({ t: "init_error", message: describe(err) });
    }
  }
};
