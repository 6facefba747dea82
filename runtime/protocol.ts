import type { EgressRules } from "./egress/policy.ts";
import type { EgressAddress } from "./egress/wire.ts";

/** The kinds of function code a host runs. */
export type RuntimeKind = "deno" | "wasm";

/** How an invocation ended: each failure mode is its own outcome. */
export type Outcome = "ok" | "error" | "timeout" | "oom" | "crash";

/** Header pairs, in order, lowercase names. */
export type HeaderList = [string, string][];

/** First message to a host and to its worker: the function it serves. */
export interface InitMessage {
  t: "init";
  kind: RuntimeKind;
  name: string;
  /** Source text or bundle (`deno`), or base64 of the module (`wasm`). */
  code: string;
  /** `code` is JavaScript bundled at deploy (its packages inside): loaded as JavaScript, not transpiled. */
  bundled?: boolean;
  env: Record<string, string>;
  memoryMb: number;
  timeoutMs: number;
  /** CPU time each call brings (runtime/cpu_budget.ts); the platform meters it, not the host. */
  cpuMs: number;
  /** The function's network: null for none; otherwise its host runs an egress gate under these rules. */
  egress: EgressRules | null;
}

/** The init message as the worker gets it: with the address of its host's egress gate, when there is one. */
export interface WorkerInitMessage extends InitMessage {
  gate: EgressAddress | null;
  /** The compiled module (`wasm`). */
  module?: WebAssembly.Module;
  /** The platform's socket: the worker connects to it once, then gives up its permission on it. */
  socket: string;
  /** Which worker of its host this is (1, 2, …): the platform ties the calls it sends on a connection to it. */
  generation: number;
  /** Shared with the host: the worker's {@linkcode WATCH} slots. */
  watch: SharedArrayBuffer;
  /** Why the function cannot run (set by the host): the worker answers every call with it. */
  failure?: string;
}

/**
 * Slots of a worker's watch buffer (a BigInt64Array over WorkerInitMessage.watch): how the host sees, without
 * asking, whether a worker is stuck past a call's time limit (a loop that never yields cannot answer a message).
 */
export const WATCH = {
  /** The earliest deadline (ms since the epoch) of the calls the worker holds; MAX when it holds none. */
  deadline: 0,
  /** When the worker last checked its calls' deadlines (ms since the epoch); it checks while it holds calls. */
  heartbeat: 1,
  length: 2,
} as const;

/** A console line's level. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** From a host to the platform: its worker `generation` is gone, and with it every call it held. */
interface LostMessage {
  t: "lost";
  generation: number;
  outcome: "error" | "timeout";
  message: string;
}

/** From a worker to its host (postMessage): its connection to the platform closed, or never opened. */
interface ClosedMessage {
  t: "closed";
}

/** One call of the function (its body travels beside the header in its frame). */
export interface RequestMessage {
  t: "req";
  id: number;
  method: string;
  url: string;
  headers: HeaderList;
  /** The platform takes the answer as a stream (runtime/README.md, "Streamed answers"); otherwise it is whole. */
  stream?: boolean;
}

/** The platform passed on `bytes` more of a streamed answer: the worker may send that much more. */
interface AckMessage {
  t: "ack";
  id: number;
  bytes: number;
}

/** The platform gave up a streamed answer (its client left, or it passed a limit): the worker cancels it. */
interface CancelMessage {
  t: "cancel";
  id: number;
}

/** The first frame on a worker's connection, once it loaded the function. */
interface ReadyMessage {
  t: "ready";
  generation: number;
}

/** The first frame on a worker's connection when the function cannot run: it answers every call with why. */
interface InitErrorMessage {
  t: "init_error";
  generation: number;
  message: string;
}

/** A `console.*` line of the function. */
interface LogMessage {
  t: "log";
  level: LogLevel;
  text: string;
}

/** A function's answer (its body travels beside the header in its frame). */
interface ResponseMessage {
  t: "res";
  id: number;
  status: number;
  headers: HeaderList;
  /** Per-invocation log lines (stderr of wasm functions). */
  logs: string[];
  /** The body beside this frame is the answer's first bytes: `chunk` frames follow, then `end` (or `fail`). */
  stream?: boolean;
}

/** More bytes of a streamed answer (beside the header in its frame). */
interface ChunkMessage {
  t: "chunk";
  id: number;
}

/** A streamed answer is complete. */
interface EndMessage {
  t: "end";
  id: number;
}

/** A call that produced no answer. */
interface FailMessage {
  t: "fail";
  id: number;
  outcome: "error" | "timeout";
  message: string;
  logs: string[];
}

// Each direction of each channel, tagged by `t`. Frames: platform ↔ host on the host's control connection,
// platform ↔ worker on the worker's own connection. postMessage: host ↔ worker inside the host.
export type PlatformToHost = InitMessage;
export type HostToPlatform = LostMessage;
export type HostToWorker = WorkerInitMessage;
export type WorkerToHost = ClosedMessage;
export type PlatformToWorker = RequestMessage | AckMessage | CancelMessage;
export type WorkerToPlatform =
  | ReadyMessage
  | InitErrorMessage
  | LogMessage
  | ResponseMessage
  | ChunkMessage
  | EndMessage
  | FailMessage;

/**
 * A message as the platform receives it from a host or a worker, which run the function's code: the tag picks
 * the member, every other field is unchecked until the platform checks it (compile time only: no cost).
 */
export type Received<M extends { t: string }> = M extends unknown
  ? { readonly t: M["t"] } & { readonly [K in Exclude<keyof M, "t">]?: unknown }
  : never;

/** Why a call failed at its time limit. */
export const timeLimitText = (timeoutMs: number) =>
  `Function ran past its time limit of ${timeoutMs / 1000} s`;

/** Why a call failed when its host used more CPU time than its calls brought. */
export const cpuLimitText = (cpuMs: number) => `Function used more than its CPU time of ${cpuMs} ms per call`;

/** Largest response body a function may return. */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;
/** Bytes of a streamed answer a worker may have sent beyond what the platform passed on (its backpressure). */
export const STREAM_WINDOW_BYTES = 256 * 1024;
/** Longest log line kept. */
export const MAX_LOG_LINE = 8 * 1024;

/** A header name HTTP can carry (RFC 9110 token), either case. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value HTTP can carry: visible characters, obs-text, spaces and tabs (no control character). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
