import type { Routes, Schemas } from "./api_types.ts";
import { errorFromResponse } from "./errors.ts";
import { type Http, pathOf } from "./http.ts";

/** An edge function as the platform stores it. */
export type EdgeFunction = Schemas["Function"];
/** What `invoke` resolves to without `raw`: the function's status, headers and body. */
export type InvokeResult = Schemas["InvokeResult"];

/** Options of `functions.invoke`. */
export interface InvokeOptions {
  /** The body the function gets: a JSON value, text, or bytes (sent base64-encoded). */
  body?: unknown;
  /** The method the function sees (default `POST`). */
  method?: string;
  /** The path with query the function sees (default `/`). */
  path?: string;
  /** Headers for the function; the platform drops reserved ones. */
  headers?: Record<string, string>;
  /** Resolve to the function's own `Response` instead of the JSON description of it. */
  raw?: boolean;
  /** Aborts the call. */
  signal?: AbortSignal;
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

/**
 * FunctionsClient invokes edge functions (any key or user) and, with a secret key, manages them: deploy,
 * list, get, update, delete, code, env, logs and stats.
 */
export class FunctionsClient {
  constructor(private readonly http: Http) {}

  /** Calls a function; `raw: true` resolves to its own Response. */
  invoke(name: string, options: InvokeOptions & { raw: true }): Promise<Response>;
  invoke(name: string, options?: InvokeOptions & { raw?: false }): Promise<InvokeResult>;
  async invoke(name: string, options: InvokeOptions = {}): Promise<InvokeResult | Response> {
    const body: Schemas["InvokeFunction"] = {
      method: options.method,
      path: options.path,
      headers: options.headers,
    };
    if (options.body instanceof Uint8Array) {
      body.body = base64(options.body);
      body.body_encoding = "base64";
    } else body.body = options.body;
    if (!options.raw) {
      return await this.http.call("POST /v1/functions/{name}/invoke", { params: { name }, body }, {
        signal: options.signal,
      });
    }
    const path = pathOf("POST /v1/functions/{name}/invoke").replace("{name}", encodeURIComponent(name));
    const res = await this.http.send("POST", path, body, {
      headers: { "x-service-invoke-mode": "raw" },
      signal: options.signal,
    });
    // The function's own answer carries this header, whatever its status; the platform's failures do not.
    if (res.headers.get("x-service-invoke-origin") !== "function" && !res.ok) {
      throw await errorFromResponse(res);
    }
    return res;
  }

  /** Deploys a function (created, or replaced when the name exists). */
  deploy(fn: Routes["POST /v1/functions"]["body"]): Promise<EdgeFunction> {
    return this.http.call("POST /v1/functions", { body: fn });
  }

  /** Every function of the project. */
  list(): Promise<EdgeFunction[]> {
    return this.http.call("GET /v1/functions");
  }

  /** One function, by name or id. */
  get(name: string): Promise<EdgeFunction> {
    return this.http.call("GET /v1/functions/{name}", { params: { name } });
  }

  /** Changes the fields given (`permissions` merged field by field). */
  update(name: string, patch: Routes["PATCH /v1/functions/{name}"]["body"]): Promise<EdgeFunction> {
    return this.http.call("PATCH /v1/functions/{name}", { params: { name }, body: patch });
  }

  /** Deletes a function. */
  delete(name: string): Promise<null> {
    return this.http.call("DELETE /v1/functions/{name}", { params: { name } }) as Promise<null>;
  }

  /** The function's source (base64 of the binary for `wasm`). */
  async getCode(name: string): Promise<string> {
    return (await this.http.call("GET /v1/functions/{name}/code", { params: { name } })).code;
  }

  /** The function's environment variables, decrypted. */
  getEnv(name: string): Promise<{ key: string; value: string }[]> {
    return this.http.call("GET /v1/functions/{name}/env", { params: { name } });
  }

  /** Replaces the whole set of environment variables. */
  async setEnv(name: string, vars: { key: string; value: string }[]): Promise<void> {
    await this.http.call("PUT /v1/functions/{name}/env", { params: { name }, body: { vars } });
  }

  /** Recent console lines of the function, newest first. */
  logs(
    name: string,
    query: Routes["GET /v1/functions/{name}/logs"]["query"] = {},
  ): Promise<Routes["GET /v1/functions/{name}/logs"]["data"]> {
    return this.http.call("GET /v1/functions/{name}/logs", { params: { name }, query });
  }

  /** Invocation counts and latency over a window (`1h`, `24h`, `7d`, `30d`). */
  stats(
    name: string,
    query: Routes["GET /v1/functions/{name}/stats"]["query"] = {},
  ): Promise<Schemas["FunctionStats"]> {
    return this.http.call("GET /v1/functions/{name}/stats", { params: { name }, query });
  }
}
