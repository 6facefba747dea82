// Fixtures of the runtime's tests: options, a function spec, a plain call, an answer as text.
import type { HostResult } from "./host_process.ts";
import type { FunctionSpec, RuntimeOptions } from "./supervisor.ts";

/** Small limits: tests reach the caps with a few functions. */
export const OPTIONS: RuntimeOptions = {
  maxHosts: 3,
  maxMemoryMb: 1024,
  maxHostsPerTenant: 3,
  maxMemoryMbPerTenant: 1024,
  idleMs: 60_000,
  allowPrivateNet: [],
  platformPorts: [],
  marginMs: 1000,
};

/** A deno function of tenant t1, version 1. */
export function spec(id: string, code: string, extra: Partial<FunctionSpec> = {}): FunctionSpec {
  return {
    tenant: "t1",
    functionId: id,
    versionKey: `${id}-v1`,
    name: id,
    kind: "deno",
    code,
    env: {},
    allowNet: [],
    memoryMb: 64,
    timeoutSecs: 5,
    cpuMs: 2000,
    ...extra,
  };
}

export const GET = { method: "GET", url: "http://localhost/", headers: [] as [string, string][], body: null };

/** The answer's body, or the outcome and message of a failure. */
export const text = (r: HostResult) =>
  r.outcome !== "ok"
    ? `${r.outcome}: ${r.message}`
    : r.body instanceof Uint8Array
    ? new TextDecoder().decode(r.body)
    : "(a stream)";
