import { errorFromResponse, networkError, PlatformError } from "./errors.ts";
import type { Routes } from "./api_types.ts";

/** A route of the platform, as `"METHOD /path"`. */
export type Route = keyof Routes;

/** What a call to `route` sends: its path params, query and body, each when the route has them. */
export type RouteInput<R extends Route> =
  & (Routes[R]["params"] extends Record<string, never> ? { params?: undefined }
    : { params: Routes[R]["params"] })
  & { query?: Partial<Routes[R]["query"]> }
  & ([Routes[R]["body"]] extends [never] ? { body?: undefined } : { body?: Routes[R]["body"] });

/** The path of a route key: `"POST /v1/ai/chat/stream"` → `/v1/ai/chat/stream`. */
export function pathOf(route: Route): string {
  return route.slice(route.indexOf(" ") + 1);
}

/** Options of one request besides its route input. */
export interface CallOptions {
  /** Extra headers, merged last. */
  headers?: Record<string, string>;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** The bearer token to send instead of the session's; `null` sends none. */
  token?: string | null;
  /** Send no `apikey` header (AI session tickets go alone). */
  noApiKey?: boolean;
}

/** How the client reaches the platform: its address, key, fetch and the current user token. */
export interface HttpConfig {
  url: string;
  key: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  /** The access token to send, refreshed when due; null without a session. */
  accessToken(): Promise<string | null>;
}

/** Http sends the platform's JSON requests and unwraps the envelope: `data`, or a thrown PlatformError. */
export class Http {
  constructor(readonly config: HttpConfig) {}

  /** The absolute URL of a path with its query (undefined values left out). */
  url(path: string, query?: Record<string, unknown>): string {
    const url = new URL(this.config.url.replace(/\/+$/, "") + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  /** The headers of a request: the API key, the bearer token, then the extra ones. */
  async headers(options: CallOptions = {}): Promise<Headers> {
    const headers = new Headers(this.config.headers);
    if (!options.noApiKey) headers.set("apikey", this.config.key);
    const token = options.token === undefined ? await this.config.accessToken() : options.token;
    if (token) headers.set("authorization", `Bearer ${token}`);
    for (const [k, v] of Object.entries(options.headers ?? {})) headers.set(k, v);
    return headers;
  }

  /** Sends a request and returns the answer as it is, throwing a PlatformError only when none arrived. */
  async send(method: string, path: string, body: unknown, options: CallOptions = {}): Promise<Response> {
    const headers = await this.headers(options);
    if (body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
    try {
      return await this.config.fetch(path.startsWith("http") ? path : this.url(path), {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.signal,
      });
    } catch (err) {
      throw networkError(err);
    }
  }

  /** Calls a route of the platform's API and resolves to the envelope's `data`. */
  async call<R extends Route>(
    route: R,
    input: RouteInput<R> = {} as RouteInput<R>,
    options: CallOptions = {},
  ): Promise<Routes[R]["data"]> {
    const space = route.indexOf(" ");
    const method = route.slice(0, space);
    const path = route.slice(space + 1).replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = (input.params as Record<string, unknown> | undefined)?.[name];
      if (value === undefined || value === "") {
        throw new PlatformError({
          code: "VALIDATION_ERROR",
          type: "invalid_request",
          message: `Missing "${name}"`,
          status: 0,
        });
      }
      return encodeURIComponent(String(value));
    });
    const res = await this.send(method, this.url(path, input.query), input.body, options);
    return await unwrap(res) as Routes[R]["data"];
  }
}

/** The `data` of an enveloped answer, or its PlatformError. */
export async function unwrap(res: Response): Promise<unknown> {
  if (!res.ok) throw await errorFromResponse(res);
  const text = await res.text();
  if (!text) return null;
  const body = JSON.parse(text);
  return body && typeof body === "object" && "data" in body ? body.data : body;
}
