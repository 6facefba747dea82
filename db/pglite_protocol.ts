import type { PipelineStatement } from "./driver.ts";

/**
 * A call from the platform to its PGlite worker; `tx` runs it inside that open transaction. `watch`: the worker
 * says when the call starts running in the engine (a `started` message), so that its timeout counts from there.
 */
export type WorkerCall =
  | { op: "open"; dir: string; maxPrepared?: number }
  | { op: "query"; tx?: number; sql: string; params: unknown[]; watch?: boolean }
  | { op: "exec"; tx?: number; sql: string; watch?: boolean }
  | { op: "execRows"; tx?: number; sql: string; watch?: boolean }
  | { op: "begin" }
  | { op: "end"; tx: number; commit: boolean }
  /** `end: "decide"`: the worker sends the rows (a `rows` event) and waits for a `decide` call. */
  | {
    op: "pipeline";
    statements: PipelineStatement[];
    end: "commit" | "rollback" | "decide";
    readOnly: boolean;
    watch?: boolean;
  }
  | { op: "decide"; pipeline: number; decision: "commit" | "rollback" }
  /** `listener` is chosen by the platform, so that it survives a restart of the worker. */
  | { op: "listen"; channel: string; listener: number }
  | { op: "unlisten"; listener: number }
  | { op: "close" };

/** A call with the id its answer carries. */
export type WorkerRequest = WorkerCall & { id: number };

/**
 * What the worker sends: an answer to a call, a pipeline's rows awaiting a decision, a notification, or that a
 * watched call started running in the engine.
 */
export type WorkerMessage =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: SerializedError }
  | { rows: number; value: Record<string, unknown>[][] }
  | { listener: number; payload: string }
  | { started: number };

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

/** The error as the caller's thread sees it: an Error with the same message, name and fields. */
export function deserializeError(e: SerializedError): Error {
  const err = Object.assign(new Error(e.message), e.fields);
  err.name = e.name;
  return err;
}
