import type { EgressRules } from "./egress/policy.ts";
import type { EgressAddress } from "./egress/wire.ts";

/** The kinds of function code a host runs. */
export type RuntimeKind = "deno" | "wasm";

/** How an invocation ended: each failure mode is its own outcome (decisions §4). */
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
  /** The function's network: null for none; otherwise its host runs an egress gate under these rules. */
  egress: EgressRules | null;
}

/** The init message as the worker gets it: with the address of its host's egress gate, when there is one. */
export interface WorkerInitMessage extends InitMessage {
  gate: EgressAddress | null;
  /** The compiled module (`wasm`). */
  module?: WebAssembly.Module;
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

/** Largest response body a function may return. */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;
/** Longest log line kept. */
export const MAX_LOG_LINE = 8 * 1024;
