/**
 * The platform's client SDK: `createClient(url, key, options?)` gives `db` (PostgREST's own client on
 * `/rest/v1`), `auth`, `functions`, `jobs`, `cron`, `alerts`, `notifications`, `ai` and `realtime`. Fetch
 * only: it runs in Deno, Node and browsers. Every method resolves to the answer's `data` and throws one
 * PlatformError (`code`, `type`, `message`, `status`, `requestId`); `db` keeps postgrest-js's `{data, error}`.
 *
 * @example
 * ```ts
 * import { createClient } from "./client/mod.ts";
 * const platform = createClient("http://localhost:8000", "pk_default_…");
 * await platform.auth.signUp({ email: "ada@example.com", password: "correct horse 1" });
 * const { data } = await platform.db.from("todos").select("*");
 * ```
 */
import { PostgrestClient } from "@supabase/postgrest-js";
import { AiClient } from "./ai.ts";
import { AlertsClient } from "./alerts.ts";
import { AuthClient, type AuthOptions } from "./auth.ts";
import { CronClient } from "./cron.ts";
import { FunctionsClient } from "./functions.ts";
import { Http } from "./http.ts";
import { JobsClient } from "./jobs.ts";
import { NotificationsClient } from "./notifications.ts";
import { RealtimeClient, type RealtimeOptions } from "./realtime.ts";

export { PlatformError } from "./errors.ts";
export type { AuthEvent, AuthOptions, Session, User, UserSession } from "./auth.ts";
export type { EdgeFunction, InvokeOptions, InvokeResult } from "./functions.ts";
export type { Job } from "./jobs.ts";
export type { CronEntry } from "./cron.ts";
export type { Alert, AlertEvent } from "./alerts.ts";
export type * from "./notification_types.ts";
export type { BatchResult, SendRequest } from "./notifications.ts";
export type { ChatChunk, ChatMessage, ChatOptions, ChatResult, ChatStreamOptions } from "./ai.ts";
export { AiSession } from "./ai.ts";
export type {
  BroadcastPayload,
  ChangePayload,
  ChangesFilter,
  ChannelOptions,
  PresenceState,
  RealtimeChannel,
  RealtimeOptions,
} from "./realtime.ts";
export type { StorageAdapter } from "./storage.ts";
export { localStorageAdapter, memoryStorage } from "./storage.ts";
export type { Routes, Schemas } from "./api_types.ts";

/** Options of {@linkcode createClient}. */
export interface ClientOptions {
  /** Session storage and refresh. */
  auth?: AuthOptions;
  /** Realtime transport, heartbeat and reconnection. */
  realtime?: RealtimeOptions;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The project's ref, when it cannot be read from `GET /v1/project` first (AI sessions and SSE need it). */
  projectRef?: string;
}

/** The client `createClient` returns. */
export interface PlatformClient {
  /** PostgREST's client on `/rest/v1`, sending the session's token. */
  db: PostgrestClient;
  auth: AuthClient;
  functions: FunctionsClient;
  jobs: JobsClient;
  cron: CronClient;
  alerts: AlertsClient;
  notifications: NotificationsClient;
  ai: AiClient;
  realtime: RealtimeClient;
  /** Runs SQL as the project database's owner (secret key only); resolves to the rows of the last statement. */
  sql(query: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Stops the refresh timer and closes realtime. */
  close(): void;
}

/** Creates a client of the platform at `url` with a project key (`pk_…` in browsers, `sk_…` on servers). */
export function createClient(url: string, key: string, options: ClientOptions = {}): PlatformClient {
  const baseFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const http = new Http({
    url,
    key,
    fetch: baseFetch,
    headers: options.headers ?? {},
    accessToken: () => Promise.resolve(null),
  });
  const auth = new AuthClient(http, options.auth);
  http.config.accessToken = () => auth.accessToken();
  let ref: Promise<string> | null = options.projectRef ? Promise.resolve(options.projectRef) : null;
  const projectRef = (): Promise<string> => {
    ref ??= http.call("GET /v1/project").then((p) => p.ref).catch((err) => {
      ref = null;
      throw err;
    });
    return ref;
  };
  // postgrest-js gets the API key and, per request, the session's token.
  const dbFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("apikey", key);
    const token = await auth.accessToken();
    if (token) headers.set("authorization", `Bearer ${token}`);
    else headers.delete("authorization");
    return await baseFetch(input, { ...init, headers });
  };
  const db = new PostgrestClient(`${url.replace(/\/+$/, "")}/rest/v1`, {
    headers: options.headers ?? {},
    fetch: dbFetch,
  });
  const realtime = new RealtimeClient(http, projectRef, options.realtime);
  auth.onAuthStateChange((event, session) => {
    if (event === "TOKEN_REFRESHED" || event === "SIGNED_IN") {
      void realtime.setAuth(session!.access_token).catch(() => {});
    }
  });
  return {
    db,
    auth,
    functions: new FunctionsClient(http),
    jobs: new JobsClient(http),
    cron: new CronClient(http),
    alerts: new AlertsClient(http),
    notifications: new NotificationsClient(http),
    ai: new AiClient(http, projectRef),
    realtime,
    sql: (query, params) =>
      http.call("POST /v1/sql", { body: params ? { query, params } : { query } }) as Promise<
        Record<string, unknown>[]
      >,
    close() {
      auth.close();
      realtime.close();
    },
  };
}
