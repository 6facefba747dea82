/**
 * A runtime host: the child process (`deno run runtime/host.ts <socket>`) that runs one function version in a
 * Web Worker with the function's permissions. The host connects to the platform's socket for control (the
 * function to run, its console lines); the worker connects on its own and answers calls on that connection,
 * so a call crosses no thread of the host. The host keeps a worker running: it replaces a worker that is stuck
 * past a call's time limit or crashed, and tells the platform which worker it lost. The process itself is
 * capped (V8 heap) and supervised by the platform.
 */
import { type EgressAddress, workerNetPermission } from "./egress/wire.ts";
import { FrameReader, FrameWriter, readChunks } from "./frames.ts";
import { EGRESS_HOST } from "./net_policy.ts";
import {
  type HostToPlatform,
  type HostToWorker,
  type InitMessage,
  type PlatformToHost,
  timeLimitText,
  WATCH,
  type WorkerToHost,
} from "./protocol.ts";
import { capMemory, PAGE_BYTES } from "./wasm/memory_cap.ts";

// How long a worker may stay past a call's deadline without checking its calls before it counts as stuck
// (a healthy worker checks every 50 ms and fails the late call itself).
const STUCK_MS = 250;
const WATCH_MS = 50;
// A worker that dies sooner than this after its start is replaced only after this long (no crash loop).
const RESTART_BACKOFF_MS = 1_000;

if (!Deno.args[0]) throw new Error("usage: host.ts <socket>");
const socketPath: string = Deno.args[0];
const conn = await Deno.connect({ transport: "unix", path: socketPath });
const writer = new FrameWriter<HostToPlatform>(conn, () => Deno.exit(0));

let init: InitMessage | null = null;
let wasmModule: WebAssembly.Module | null = null;
let initError: string | null = null;
// The function's egress gate, opened at init when it has a network (loaded then: most functions have none).
let gateOpening: Promise<EgressAddress | null> = Promise.resolve(null);

interface Running {
  worker: Worker;
  generation: number;
  watch: BigInt64Array;
  startedAt: number;
}

let running: Running | null = null;
let generation = 0;

function lost(r: Running, outcome: HostToPlatform["outcome"], message: string): void {
  if (running !== r) return;
  running = null;
  r.worker.terminate();
  writer.write({ t: "lost", generation: r.generation, outcome, message });
  const wait = Date.now() - r.startedAt < RESTART_BACKOFF_MS ? RESTART_BACKOFF_MS : 0;
  setTimeout(startWorker, wait);
}

/** A worker whose earliest call is past its deadline and that stopped checking its calls loops: stop it. */
function checkStuck(): void {
  const r = running;
  if (!r) return;
  const now = Date.now();
  const deadline = Number(Atomics.load(r.watch, WATCH.deadline));
  if (now - deadline < STUCK_MS) return;
  if (now - Number(Atomics.load(r.watch, WATCH.heartbeat)) < STUCK_MS) return;
  lost(r, "timeout", timeLimitText(init!.timeoutMs));
}

/** A worker with a function's permissions: its own socket, and the egress gate when the function has one. */
function createWorker(gate: EgressAddress | null): Worker {
  return new Worker(new URL("./worker.ts", import.meta.url), {
    type: "module",
    deno: {
      permissions: {
        // The worker's own connection to the platform (given up before the function's code runs), and the
        // network only through its host's egress gate (runtime/egress/).
        net: [`unix:${socketPath}`, ...(gate ? workerNetPermission(gate) : [])],
        read: [socketPath],
        write: [socketPath],
        env: false,
        run: false,
        ffi: false,
        sys: false,
        import: false,
      },
    },
  });
}

// Started with the host, before it knows its function: a cold start then waits only for the function's own
// module, not for a worker to boot (most of a cold start otherwise). Used when the function has no network.
let spare: Worker | null = createWorker(null);
// A spare that fails before it is used is dropped: the function then gets a worker of its own.
spare.onerror = (e: ErrorEvent) => {
  e.preventDefault();
  spare?.terminate();
  spare = null;
};

async function startWorker(): Promise<void> {
  if (running || !init) return;
  let gate: EgressAddress | null;
  try {
    gate = await gateOpening;
  } catch (err) {
    gate = null;
    initError ??= `Cannot open the function's network gate: ${(err as Error).message}`;
  }
  const msg = init;
  let w: Worker;
  if (spare && !gate) w = spare;
  else {
    spare?.terminate();
    w = createWorker(gate);
  }
  spare = null;
  const watch = new BigInt64Array(new SharedArrayBuffer(WATCH.length * 8));
  watch[WATCH.deadline] = 0x7fffffffffffffffn;
  const r: Running = { worker: w, generation: ++generation, watch, startedAt: Date.now() };
  running = r;
  // The function's code can post too: a message is only ever a reason to replace the worker.
  w.onmessage = (e: MessageEvent<WorkerToHost | null>) => {
    if (e.data?.t === "closed") lost(r, "error", "Function runtime lost its worker");
  };
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    lost(r, "error", `Function crashed: ${e.message}`);
  };
  const workerInit: HostToWorker = {
    ...msg,
    ...(msg.kind === "wasm" ? { code: "", module: wasmModule ?? undefined } : {}),
    gate,
    socket: socketPath,
    generation: r.generation,
    watch: watch.buffer as SharedArrayBuffer,
  };
  // A function that cannot load still gets a worker: it answers every call with the reason.
  if (initError) workerInit.failure = initError;
  w.postMessage(workerInit);
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
      initError = `Cannot load the WebAssembly module: ${(err as Error).message}`;
    }
  }
  setInterval(checkStuck, WATCH_MS);
  startWorker();
}

const reader = new FrameReader<PlatformToHost>();
for await (const chunk of readChunks(conn)) {
  for (const { header } of reader.push(chunk)) {
    if (header.t === "init" && !init) setup(header);
  }
}
Deno.exit(0); // the platform closed the socket
