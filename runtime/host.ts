/**
 * A runtime host: the child process (`deno run runtime/host.ts <socket>`) that runs one function version in a
 * Web Worker with the function's permissions. It talks to the platform over a Unix socket in frames, keeps
 * the worker warm, runs calls concurrently in it, stops a call at its time limit and replaces a worker that
 * stopped answering. The process itself is capped (V8 heap) and supervised by the platform.
 */
import { type EgressAddress, workerNetPermission } from "./egress/wire.ts";
import { FrameReader, FrameWriter, readChunks } from "./frames.ts";
import { EGRESS_HOST } from "./net_policy.ts";
import type { InitMessage, RequestMessage, WorkerInitMessage } from "./protocol.ts";
import { capMemory, PAGE_BYTES } from "./wasm/memory_cap.ts";

/** A message from the worker (see protocol.ts), loosely typed as it crosses postMessage. */
interface WorkerMessage {
  t: string;
  id: number;
  body?: Uint8Array;
  outcome: "error" | "timeout";
  message: string;
  logs: string[];
  level: string;
  text: string;
}

interface Pending {
  /** When the call passes its time limit (ms since the epoch); Infinity once it is being stopped. */
  deadline: number;
}

// One watchdog for every call instead of a timer each (timers cost a lot per call under load).
const WATCHDOG_MS = 50;

const socketPath = Deno.args[0];
if (!socketPath) throw new Error("usage: host.ts <socket>");
const conn = await Deno.connect({ transport: "unix", path: socketPath });
const writer = new FrameWriter(conn, () => Deno.exit(0));
const send = (header: Record<string, unknown>, body: Uint8Array | null = null) => writer.write(header, body);

let init: InitMessage | null = null;
let wasmModule: WebAssembly.Module | null = null;
// The function's egress gate, opened at init when it has a network (loaded then: most functions have none).
let gateOpening: Promise<EgressAddress | null> = Promise.resolve(null);
let worker: Worker | null = null;
let ready: Promise<string | null> | null = null; // resolves to an init error, or null when ready
let pong: (() => void) | null = null;
const pending = new Map<number, Pending>();
let watchdog: ReturnType<typeof setInterval> | null = null;

function settle(id: number): boolean {
  if (!pending.delete(id)) return false;
  if (pending.size === 0 && watchdog !== null) {
    clearInterval(watchdog);
    watchdog = null;
  }
  return true;
}

function fail(id: number, outcome: "error" | "timeout", message: string, logs: string[] = []): void {
  if (settle(id)) send({ t: "fail", id, outcome, message, logs });
}

function checkDeadlines(): void {
  const now = Date.now();
  const late: number[] = [];
  for (const [id, p] of pending) {
    if (p.deadline <= now) {
      p.deadline = Infinity;
      late.push(id);
    }
  }
  if (late.length > 0) onTimeout(late);
}

async function startWorker(): Promise<string | null> {
  let gate: EgressAddress | null;
  try {
    gate = await gateOpening;
  } catch (err) {
    return `Cannot open the function's network gate: ${(err as Error).message}`;
  }
  const msg = init!;
  const w = new Worker(new URL("./worker.ts", import.meta.url), {
    type: "module",
    deno: {
      permissions: {
        // The worker reaches the network only through its host's egress gate (runtime/egress/).
        net: gate ? workerNetPermission(gate) : false,
        read: false,
        write: false,
        env: false,
        run: false,
        ffi: false,
        sys: false,
        import: false,
      },
    },
  });
  worker = w;
  const { promise, resolve } = Promise.withResolvers<string | null>();
  const onMessage = (m: WorkerMessage) => {
    if (m.t === "res") {
      if (!settle(m.id)) return;
      const { body, ...header } = m;
      send(header, body);
    } else if (m.t === "fail") {
      fail(m.id, m.outcome, m.message, m.logs);
    } else if (m.t === "log") {
      send({ t: "log", level: m.level, text: m.text });
    } else if (m.t === "pong") {
      pong?.();
    } else if (m.t === "ready") {
      resolve(null);
    } else if (m.t === "init_error") {
      resolve(m.message);
    }
  };
  w.onmessage = (e: MessageEvent) => {
    if (e.data.t === "batch") { for (const m of e.data.msgs) onMessage(m); }
    else onMessage(e.data);
  };
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    const message = `Function crashed: ${e.message}`;
    resolve(message);
    restart(message, "error");
  };
  const workerInit: WorkerInitMessage = msg.kind === "wasm"
    ? { ...msg, code: "", module: wasmModule!, gate: null }
    : { ...msg, gate };
  w.postMessage(workerInit);
  return promise;
}

/** Drops the current worker and fails every call it held; the next call starts a fresh one. */
function restart(message: string, outcome: "error" | "timeout"): void {
  worker?.terminate();
  worker = null;
  ready = null;
  for (const id of [...pending.keys()]) fail(id, outcome, message);
}

let pinging: { worker: Worker; answer: Promise<boolean> } | null = null;

/** True when the worker answers a ping within 250 ms; overlapping checks of one worker share one ping. */
function alive(w: Worker): Promise<boolean> {
  if (pinging?.worker === w) return pinging.answer;
  const answer = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      pong = null;
      resolve(false);
    }, 250);
    pong = () => {
      clearTimeout(timer);
      pong = null;
      resolve(true);
    };
    w.postMessage({ t: "ping" });
  });
  const current = { worker: w, answer };
  pinging = current;
  answer.finally(() => {
    if (pinging === current) pinging = null;
  });
  return answer;
}

async function onTimeout(ids: number[]): Promise<void> {
  const w = worker;
  const limit = `Function ran past its time limit of ${init!.timeoutMs / 1000} s`;
  if (!w || !(await alive(w))) {
    // The worker is stuck (a loop that never yields): stop it; every call it held is lost.
    if (w === worker) restart(limit, "timeout");
    return;
  }
  for (const id of ids) {
    w.postMessage({ t: "cancel", id });
    fail(id, "timeout", limit);
  }
}

/** Hands the calls of one socket read to the worker in one message. */
async function handle(batch: { msg: RequestMessage; body: Uint8Array | null }[]): Promise<void> {
  const deadline = Date.now() + init!.timeoutMs;
  for (const { msg } of batch) pending.set(msg.id, { deadline });
  watchdog ??= setInterval(checkDeadlines, WATCHDOG_MS);
  ready ??= startWorker();
  const error = await ready;
  const live = batch.filter(({ msg }) => pending.has(msg.id));
  if (error) return live.forEach(({ msg }) => fail(msg.id, "error", error));
  if (live.length === 0) return;
  const reqs = live.map(({ msg, body }) => ({ ...msg, body }));
  const transfer = live.flatMap(({ body }) => body ? [body.buffer as ArrayBuffer] : []);
  worker!.postMessage({ t: "batch", reqs }, transfer);
}

function setup(msg: InitMessage): void {
  init = msg;
  const rules = msg.egress;
  if (msg.kind === "deno" && rules) {
    gateOpening = import("./egress/gate.ts").then((m) => m.openGate(rules, EGRESS_HOST));
    gateOpening.catch(() => {}); // reported by startWorker
  }
  if (msg.kind === "wasm") {
    try {
      const bytes = Uint8Array.from(atob(msg.code), (c) => c.charCodeAt(0));
      const capped = capMemory(bytes, Math.floor(msg.memoryMb * 1048576 / PAGE_BYTES));
      wasmModule = new WebAssembly.Module(capped as Uint8Array<ArrayBuffer>);
    } catch (err) {
      ready = Promise.resolve(`Cannot load the WebAssembly module: ${(err as Error).message}`);
    }
  }
}

const reader = new FrameReader();
for await (const chunk of readChunks(conn)) {
  const batch: { msg: RequestMessage; body: Uint8Array | null }[] = [];
  for (const { header, body } of reader.push(chunk)) {
    if (header.t === "req") batch.push({ msg: header as unknown as RequestMessage, body });
    else if (header.t === "init") setup(header as unknown as InitMessage);
  }
  if (batch.length > 0) handle(batch);
}
Deno.exit(0); // the platform closed the socket
