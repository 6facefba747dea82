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
  /** Source text (`deno`) or base64 of the module (`wasm`). */
  code: string;
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

/** The first frame on a worker's connection, once it loaded the function: ready, or why it cannot be. */
export interface HelloMessage {
  t: "ready" | "init_error";
  generation: number;
  message?: string;
}

/** From a host to the platform: its worker `generation` is gone, and with it every call it held. */
export interface LostMessage {
  t: "lost";
  generation: number;
  outcome: "error" | "timeout";
  message: string;
}

/** One call of the function (its body travels beside the header in a frame, or as `body` to a worker). */
export interface RequestMessage {
  t: "req";
  id: number;
  method: string;
  url: string;
  headers: HeaderList;
}

/** A function's answer. */
export interface ResponseMessage {
  t: "res";
  id: number;
  status: number;
  headers: HeaderList;
  /** Per-invocation log lines (stderr of wasm functions). */
  logs: string[];
}

/** A call that produced no answer. */
export interface FailMessage {
  t: "fail";
  id: number;
  outcome: "error" | "timeout";
  message: string;
  logs: string[];
}

/** A `console.*` line of the function. */
export interface LogMessage {
  t: "log";
  level: "debug" | "info" | "warn" | "error";
  text: string;
}

/** Why a call failed at its time limit. */
export const timeLimitText = (timeoutMs: number) =>
  `Function ran past its time limit of ${timeoutMs / 1000} s`;

/** Why a call failed when its host used more CPU time than its calls brought. */
export const cpuLimitText = (cpuMs: number) => `Function used more than its CPU time of ${cpuMs} ms per call`;

/** Largest response body a function may return. */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;
/** Longest log line kept. */
export const MAX_LOG_LINE = 8 * 1024;

/** A header name HTTP can carry (RFC 9110 token), either case. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value HTTP can carry: visible characters, obs-text, spaces and tabs (no control character). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
