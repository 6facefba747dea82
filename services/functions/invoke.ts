import {
  cpuLimitText,
  HEADER_NAME,
  HEADER_VALUE,
  type HeaderList,
  type Outcome,
} from "../../runtime/protocol.ts";
import { type Runtime, RuntimeUnavailable } from "../../runtime/supervisor.ts";
import { decodeBase64 } from "../../lib/encoding.ts";
import { publicErrorText } from "./error_text.ts";
import { errors } from "../../lib/errors.ts";
import type { FunctionService } from "./functions.ts";
import type { InvocationRecorder } from "./invocations.ts";
import type { FunctionLogs } from "./logs.ts";
import type { InvocationQuota } from "./quota.ts";
import type { SharedRateLimit } from "../limits/rate_limit.ts";

/** The body of POST /v1/functions/{name}/invoke (docs/functions.md). */
export interface InvokeInput {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  /** A JSON value, text, or the raw bytes of a request (sent as they are, with the caller's content type). */
  body?: unknown;
  /** `base64` when `body` is a string holding binary data. */
  body_encoding?: "utf8" | "base64";
}

/** Who calls and from where. */
export interface InvokeContext {
  ref: string;
  requestId: string;
  /** Identifies the client for the rate limit: key role + user, or IP. */
  clientId: string;
  /** Verified claims of a signed-in caller (sent as `x-platform-user`). */
  user?: Record<string, unknown>;
  /**
   * Set when a background job runs the function: adds `x-platform-job-id` and
   * `x-platform-job-attempt`, and skips the per-client rate limit (the job dispatcher paces jobs itself).
   */
  job?: { id: string; attempt: number };
}

/** The function's answer. */
export interface InvokeResult {
  status: number;
  headers: HeaderList;
  body: Uint8Array;
  logs: string[];
  duration_ms: number;
}

/**
 * The function's answer as it is written (raw mode and `/functions/v1`): its body is a stream when the
 * function was still writing it; the call is recorded when it ends.
 */
export interface StreamedResult extends Omit<InvokeResult, "body"> {
  body: Uint8Array | ReadableStream<Uint8Array>;
}

/** Headers the caller may not pass to a function. */
const RESERVED = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "trailers",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "apikey",
  "authorization",
]);

/** True for a header the caller may not set. */
export function isReservedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return RESERVED.has(n) || n.startsWith("x-platform-");
}

const encoder = new TextEncoder();

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Dependencies of the {@linkcode Invoker}. */
export interface InvokerDeps {
  functions: FunctionService;
  runtime: Runtime;
  logs: FunctionLogs;
  recorder: InvocationRecorder;
  quota: InvocationQuota;
  /** Per-client calls per minute of each function (INVOKE_RATE_PER_MIN). */
  rateLimit: SharedRateLimit;
}

/**
 * Invoker runs one call of a function: finds the active function, applies the client's rate
 * limit and the project's quota, builds the request the function sees, runs it in the runtime and maps every
 * failure to its error (404, 429, 403, 503, 504, or a function error), recording the outcome.
 */
export class Invoker {
  constructor(private readonly deps: InvokerDeps) {}

  /** Builds the Request parts the function sees; 400 on a bad method, path or header. */
  buildRequest(input: InvokeInput, ctx: InvokeContext) {
    const method = (input.method ?? "POST").toUpperCase();
    if (!METHODS.has(method)) {
      throw errors.validation(`Invalid body: method: "${input.method}" is not supported`);
    }
    const path = input.path ?? "/";
    if (!path.startsWith("/") || path.startsWith("//")) {
      throw errors.validation('Invalid body: path: must start with "/"');
    }
    let url = "http://localhost/";
    if (path !== "/") {
      const parsed = URL.parse(path, "http://localhost");
      // A path can name another host (`/\evil.example/`, read as `//evil.example/`): the function sees localhost.
      if (parsed?.host !== "localhost") throw errors.validation("Invalid body: path: not a valid path");
      url = parsed.href;
    }
    const headers = new Map<string, string>();
    for (const [rawName, value] of input.headers ? Object.entries(input.headers) : []) {
      const name = rawName.toLowerCase();
      if (!HEADER_NAME.test(name) || !HEADER_VALUE.test(value)) {
        throw errors.validation(`Invalid body: headers: "${rawName.slice(0, 64)}" is not a valid header`);
      }
      if (!isReservedHeader(name)) headers.set(name, value.trim());
    }
    let body: Uint8Array | null = null;
    if (input.body instanceof Uint8Array) {
      body = input.body;
    } else if (input.body !== undefined && input.body !== null) {
      if (typeof input.body === "string") {
        if (input.body_encoding === "base64") {
          try {
            body = decodeBase64(input.body);
          } catch {
            throw errors.validation("Invalid body: body: not valid base64");
          }
        } else body = encoder.encode(input.body);
        if (!headers.has("content-type") && input.body_encoding !== "base64") {
          headers.set("content-type", "text/plain;charset=UTF-8");
        }
      } else {
        body = encoder.encode(JSON.stringify(input.body));
        if (!headers.has("content-type")) headers.set("content-type", "application/json");
      }
    }
    if (body && (method === "GET" || method === "HEAD")) body = null;
    // The caller's headers cannot name these (x-platform- is reserved): they go last, unchecked.
    const list: HeaderList = headers.size === 0 ? [] : [...headers];
    list.push(["x-platform-request-id", ctx.requestId], ["x-platform-project", ctx.ref]);
    if (ctx.user) list.push(["x-platform-user", JSON.stringify(ctx.user)]);
    if (ctx.job) {
      list.push(["x-platform-job-id", ctx.job.id], ["x-platform-job-attempt", String(ctx.job.attempt)]);
    }
    return { method, url, headers: list, body };
  }

  /** Runs one call; throws the platform's error for every failure that is not the function's own answer. */
  invoke(name: string, input: InvokeInput, ctx: InvokeContext): Promise<InvokeResult> {
    return this.run(name, input, ctx, false) as Promise<InvokeResult>;
  }

  /**
   * Runs one call whose answer goes back as it is written: the same as {@linkcode invoke} until the answer's
   * headers; then its body streams, under the function's time limit (the whole stream) and the response size
   * limit, and the call is recorded when the stream ends (complete, cut, or given up by the client).
   */
  invokeStreamed(name: string, input: InvokeInput, ctx: InvokeContext): Promise<StreamedResult> {
    return this.run(name, input, ctx, true);
  }

  private async run(
    name: string,
    input: InvokeInput,
    ctx: InvokeContext,
    stream: boolean,
  ): Promise<StreamedResult> {
    const found = this.deps.functions.loadActive(ctx.ref, name);
    const loaded = found instanceof Promise ? await found : found;
    if (!loaded) throw errors.notFound(`Function "${name}" does not exist or is not active`);
    const { fn, spec } = loaded;
    this.deps.logs.own(fn.id, ctx.ref);
    const taken = ctx.job
      ? { ok: true as const }
      : this.deps.rateLimit.take(`${ctx.ref}\u0000${fn.id}\u0000${ctx.clientId}`);
    if (!taken.ok) {
      throw errors.rateLimited(
        `Too many calls of function "${name}": try again later`,
        taken.retryAfterSeconds,
      );
    }
    const quota = this.deps.quota.take(ctx.ref);
    if (quota) await quota;
    const req = stream ? { ...this.buildRequest(input, ctx), stream } : this.buildRequest(input, ctx);
    const started = performance.now();
    let result;
    try {
      result = await this.deps.runtime.invoke(spec, req);
    } catch (err) {
      if (err instanceof RuntimeUnavailable) throw errors.unavailable(`${err.message}`, err.cause);
      throw err;
    }
    const duration_ms = Math.round((performance.now() - started) * 100) / 100;
    const record = (status: number | null, outcome: Outcome = result.outcome, durationMs = duration_ms) =>
      this.deps.recorder.record(ctx.ref, {
        functionId: fn.id,
        functionName: fn.name,
        status,
        outcome,
        durationMs,
        at: Date.now(),
      });
    for (const line of result.logs) this.deps.logs.add(fn.id, "info", line);
    if (result.outcome === "ok" && "ended" in result) {
      const status = result.status;
      result.ended.then((end) => {
        const durationMs = Math.round((performance.now() - started) * 100) / 100;
        if (end.outcome === "ok") return record(status, "ok", durationMs);
        this.deps.logs.add(fn.id, "error", `Answer cut: ${publicErrorText(end.message)}`);
        record(end.outcome === "timeout" ? 504 : 500, end.outcome, durationMs);
      });
      return { status, headers: result.headers, body: result.body, logs: result.logs, duration_ms };
    }
    if (result.outcome === "ok") {
      record(result.status);
      return {
        status: result.status,
        headers: result.headers,
        body: result.body,
        logs: result.logs,
        duration_ms,
      };
    }
    const message = publicErrorText(result.message);
    this.deps.logs.add(fn.id, "error", message);
    if (result.outcome === "timeout") {
      record(504);
      const limit = result.message === cpuLimitText(spec.cpuMs)
        ? `used more than its CPU time of ${spec.cpuMs} ms`
        : `did not answer within its time limit of ${spec.timeoutSecs} s`;
      throw errors.timeout(`Function "${fn.name}" ${limit}`);
    }
    record(500);
    const code = result.outcome === "oom"
      ? "FUNCTION_OOM"
      : result.outcome === "crash"
      ? "FUNCTION_CRASHED"
      : "FUNCTION_ERROR";
    throw errors.functionFailed(code, `Function "${fn.name}" failed: ${message}`);
  }
}
