import postgres from "postgres";
import { Databases } from "../db/databases.ts";
import { createHandler, type Handler } from "../routes/mod.ts";
import { type Config, loadConfig } from "../services/config.ts";
import { randomHex, sha256Hex } from "../lib/crypto.ts";
import { closePlatform, openPlatform, type Platform } from "../services/platform.ts";
import { startWorkers, type Workers } from "../workers/mod.ts";
import { within } from "./assert.ts";

// `within` lives in assert.ts (no dependencies), so that tests of one module can bound their waits cheaply.
export { within };

/** The admin every test platform starts with. */
export const ADMIN = { email: "admin@example.com", password: "admin-password-1" };

/** A fresh place for one platform: a temp data dir, and a fresh database when DATABASE_URL is set. */
export interface Sandbox {
  env: Record<string, string>;
  publicKey: string;
  secretKey: string;
  /** Drops the databases and removes the data dir. */
  destroy(): Promise<void>;
}

/** The server URL of `DATABASE_URL` when the suite runs against PostgreSQL. */
export const serverUrl = Deno.env.get("DATABASE_URL");

/**
 * The templates of new embedded databases, shared by every sandbox of this checkout (PGLITE_TEMPLATE_DIR): the
 * first sandbox makes them, the others copy them rather than running initdb and the migrations each time.
 */
export async function sharedTemplates(): Promise<string> {
  const checkout = (await sha256Hex(new URL("..", import.meta.url).pathname)).slice(0, 12);
  return `${Deno.env.get("TMPDIR") ?? "/tmp"}/platform-test-templates-${checkout}`;
}

/** Makes a sandbox; `env` overrides the defaults. */
export async function makeSandbox(env: Record<string, string> = {}): Promise<Sandbox> {
  const id = randomHex(6);
  const dataDir = await Deno.makeTempDir({ prefix: "platform-test-" });
  const publicKey = `pk_default_${randomHex(16)}`;
  const secretKey = `sk_default_${randomHex(16)}`;
  const base: Record<string, string> = {
    DATA_DIR: dataDir,
    PGLITE_TEMPLATE_DIR: await sharedTemplates(),
    DEFAULT_PUBLIC_KEY: publicKey,
    DEFAULT_SECRET_KEY: secretKey,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    PLATFORM_SECRET: `test-secret-${randomHex(16)}`,
    LOG_LEVEL: "warn",
    QUIET: "true",
    AUTH_RATE_PER_MIN: "1000",
    DATA_AGGREGATES: "true",
  };
  let dbName: string | undefined;
  if (serverUrl) {
    dbName = `t_${id}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    for (let attempt = 1;; attempt++) {
      try {
        await admin.unsafe(`create database "${dbName}"`);
        break;
      } catch (err) {
        // 55006: another session is copying template1 right now (tests run side by side); try again.
        if ((err as { code?: string }).code !== "55006" || attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${dbName}`;
    base.DATABASE_URL = url.toString();
  }
  return {
    env: { ...base, ...env },
    publicKey,
    secretKey,
    async destroy() {
      if (serverUrl && dbName) {
        const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
        const dbs = await admin.unsafe<{ datname: string }[]>(
          "select datname from pg_database where datname = $1 or datname like $2",
          [dbName, `${dbName}\\_%`],
        );
        for (const { datname } of dbs) {
          await admin.unsafe(`drop database if exists "${datname}" with (force)`);
        }
        // Each project database had an owner and an authenticator login (Databases.ownerSession, .tenant); roles
        // are cluster-wide and outlive their database, so they go too, or every run would leave some behind.
        const roles = await admin.unsafe<{ rolname: string }[]>(
          "select rolname from pg_roles where rolname like $1",
          [`${dbName}\\_%`],
        );
        for (const { rolname } of roles) {
          for (let attempt = 1;; attempt++) {
            try {
              await admin.unsafe(`drop role if exists "${rolname}"`);
              break;
            } catch (err) {
              // XX000 "tuple concurrently updated": another test changed the role catalog at that moment.
              if ((err as { code?: string }).code !== "XX000" || attempt >= 5) throw err;
              await new Promise((r) => setTimeout(r, 50 * attempt));
            }
          }
        }
        await admin.end();
      }
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Another instance of `sandbox`'s platform that shares only its PostgreSQL database: its own DATA_DIR, so its
 * own local Deno KV (`KV_PATH`) and package cache. `destroy` removes that directory only.
 */
export async function ownDataDir(sandbox: Sandbox): Promise<Sandbox> {
  const dataDir = await Deno.makeTempDir({ prefix: "platform-test-" });
  return {
    ...sandbox,
    env: { ...sandbox.env, DATA_DIR: dataDir, KV_PATH: `${dataDir}/kv.sqlite3` },
    destroy: () => Deno.remove(dataDir, { recursive: true }).catch(() => {}),
  };
}

/**
 * Runs SQL as the server's user straight on the default project's database of a sandbox on PostgreSQL, for
 * tests whose platforms run in child processes (no in-process handle) and that read the internal schemas.
 */
export async function projectSql(sandbox: Sandbox, sql: string): Promise<Json[]> {
  const url = new URL(sandbox.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_default`;
  const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    return [...await db.unsafe(sql)];
  } finally {
    await db.end();
  }
}

/** The sandbox's databases opened directly, without a platform: for tests of the database layer. */
export function openSandboxDatabases(sandbox: Sandbox, poolSize = 2): Promise<Databases> {
  return Databases.open({
    databaseUrl: sandbox.env.DATABASE_URL,
    dataDir: sandbox.env.DATA_DIR!,
    poolSize,
    ownerSecret: "test-owner-secret",
    templates: sandbox.env.PGLITE_TEMPLATE_DIR,
  });
}

/**
 * Waits for the next minute when the current one ends within 15 s: the shared rate limits count per UTC minute,
 * so a test of one must not see its minute change under it.
 */
export async function awayFromMinuteEnd(): Promise<void> {
  const left = 60_000 - Date.now() % 60_000;
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 100));
}

/**
 * Runs `run` so that it starts and ends in one UTC minute, as a test of a per-minute limit needs: when the minute
 * turned meanwhile (a loaded machine), runs it again from the start of the minute after, at most three times.
 * `run` collects what the test asserts afterwards; it must be fine to run again.
 */
export async function inOneMinute<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    await awayFromMinuteEnd();
    const minute = Math.floor(Date.now() / 60_000);
    const result = await run();
    if (Math.floor(Date.now() / 60_000) === minute || attempt === 3) return result;
    await new Promise((r) => setTimeout(r, 60_000 - Date.now() % 60_000 + 100));
  }
}

/** A platform running in this process, called through its fetch handler. */
export interface TestPlatform {
  platform: Platform;
  config: Config;
  handler: Handler;
  sandbox: Sandbox;
  publicKey: string;
  secretKey: string;
  /** Calls the platform; `path` may be a full URL (to choose the host) or a path on the default project. */
  fetch(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Signs in as the admin and returns a console session token. */
  adminToken(): Promise<string>;
  /**
   * Runs SQL straight on a project database as the platform (not as its owner), for tests that inspect the
   * platform's internal schemas, which `POST /v1/sql` rightly refuses. Returns the rows of the last statement.
   */
  internalSql(query: string, params?: unknown[], ref?: string): Promise<Record<string, unknown>[]>;
  /** The background workers, when started with `{ workers: true }`. */
  workers: Workers | null;
  /** Stops the workers and closes the platform; `keepSandbox` keeps its data for a restart. */
  close(options?: { keepSandbox?: boolean }): Promise<void>;
}

/** Options of {@linkcode startPlatform}. */
export interface StartOptions {
  /** Start the KV queue dispatcher and sweeper, as main.ts does. */
  workers?: boolean;
  /** Reuse the data of an earlier platform (a restart). */
  sandbox?: Sandbox;
  /** With `workers`: run the alert evaluator's timer too (default true; false lets a test drive the ticks). */
  alertTimer?: boolean;
}

/** Starts a platform in this process against PGlite, or PostgreSQL when DATABASE_URL is set. */
export async function startPlatform(
  env: Record<string, string> = {},
  options: StartOptions = {},
): Promise<TestPlatform> {
  const sandbox = options.sandbox ?? await makeSandbox(env);
  const config = loadConfig({ ...sandbox.env, ...env });
  const platform = await openPlatform(config);
  const handler = createHandler(platform);
  const workers = options.workers
    ? startWorkers(platform, { sweepEveryMs: 0, alerts: options.alertTimer })
    : null;
  let adminToken: string | undefined;
  const tp: TestPlatform = {
    platform,
    config,
    handler,
    sandbox,
    publicKey: sandbox.publicKey,
    secretKey: sandbox.secretKey,
    fetch(path, init = {}) {
      const url = path.startsWith("http") ? path : `http://127.0.0.1${path}`;
      const headers = new Headers(init.headers);
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        if (!headers.has("content-type")) headers.set("content-type", "application/json");
      }
      return Promise.resolve(handler(new Request(url, { ...init, headers, body })));
    },
    async internalSql(query, params, ref = "default") {
      const db = await platform.dbs.project(ref);
      return params && params.length > 0 ? await db.query(query, params) : await db.execRows(query);
    },
    async adminToken() {
      if (!adminToken) {
        const res = await tp.fetch("/v1/admin/login", { method: "POST", json: ADMIN });
        adminToken = (await res.json()).data.token as string;
      }
      return adminToken;
    },
    workers,
    async close(closeOptions = {}) {
      // Liveness bounds (120 s), not timing claims: a stop that never ends fails the test instead of the suite.
      if (workers) await within(workers.stop(), 120_000, "the workers' stop");
      await within(closePlatform(platform), 120_000, "the platform's close");
      if (!closeOptions.keepSandbox) await sandbox.destroy();
    },
  };
  return tp;
}

/** A platform in a child process (`deno run main.ts`), for restarts, signals and real sockets. */
export interface ChildPlatform {
  port: number;
  url: string;
  process: Deno.ChildProcess;
  /** Output lines seen so far (stdout and stderr). */
  output: string[];
  /** Sends a signal and waits for the exit status. */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Starts `main.ts` in a child process with `env` and waits until it listens. */
/**
 * The environment `deno task start` sets before `deno run` (its leading `NAME=value` words in deno.json), so that
 * a platform started as a child runs as a user's does.
 */
export function startTaskEnv(): Record<string, string> {
  const tasks = JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url))).tasks;
  const env: Record<string, string> = {};
  for (const word of String(tasks.start).split(/\s+/)) {
    const assignment = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word);
    if (!assignment) break;
    env[assignment[1]!] = assignment[2]!;
  }
  return env;
}

export async function spawnPlatform(env: Record<string, string>): Promise<ChildPlatform> {
  const main = new URL("../main.ts", import.meta.url).pathname;
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      main,
    ],
    env: { ...startTaskEnv(), ...env, PORT: "0", HOSTNAME: "127.0.0.1", LOG_LEVEL: "info", QUIET: "false" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  const { promise: listening, resolve, reject } = Promise.withResolvers<number>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        const port = line.match(/"msg":"listening","port":(\d+)/)?.[1];
        if (port) resolve(Number(port));
      }
    }
  };
  const pumps = Promise.all([pump(process.stdout), pump(process.stderr)]);
  let stopping = false;
  const exited = process.status.then(async (s) => {
    reject(new Error(`Platform exited with ${s.code} before listening:\n${output.join("\n")}`));
    if (!stopping) {
      // A platform that dies under a test says why: its last lines reach the test's output (not awaiting the
      // pipes' end, which function hosts it started may hold open).
      await new Promise((r) => setTimeout(r, 200));
      console.error(
        `Platform exited on its own with ${s.code}; its last output:\n${output.slice(-60).join("\n")}`,
      );
    }
    return s;
  });
  // A liveness bound, not a timing claim: a start on a loaded 2-core machine has taken over a minute.
  const timer = setTimeout(
    () => reject(new Error(`Platform did not listen in 180 s:\n${output.join("\n")}`)),
    180_000,
  );
  const port = await listening.finally(() => clearTimeout(timer));
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    process,
    output,
    async stop(signal: Deno.Signal = "SIGTERM") {
      stopping = true;
      try {
        process.kill(signal);
      } catch { /* already gone */ }
      // Liveness bounds, not timing claims. A child that ignores the signal for 60 s gets SIGKILL.
      let status: Deno.CommandStatus;
      try {
        status = await within(exited, 60_000, `the platform's exit on ${signal}`);
      } catch {
        try {
          process.kill("SIGKILL");
        } catch { /* already gone */ }
        status = await within(exited, 60_000, "the platform's exit on SIGKILL");
      }
      // Function hosts the platform started may hold its pipes open after it exits: their end is not waited for.
      await within(pumps, 5_000, "the platform's pipes' end").catch(() => {});
      return status;
    },
  };
}

/**
 * Sends one HTTP/1.1 request over a raw TCP socket, so that the `Host` header is exactly the one given
 * (Deno's fetch replaces it and does not resolve `*.localhost`).
 */
export async function rawRequest(
  port: number,
  request: { method: string; path: string; host: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Headers; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const body = request.body ?? "";
  const head = [
    `${request.method} ${request.path} HTTP/1.1`,
    `Host: ${request.host}`,
    "Connection: close",
    `Content-Length: ${new TextEncoder().encode(body).length}`,
    ...Object.entries(request.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    "",
    "",
  ].join("\r\n");
  await conn.write(new TextEncoder().encode(head + body));
  const text = await new Response(conn.readable).text();
  const [headText = "", ...rest] = text.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = headText.split("\r\n");
  const headers = new Headers();
  for (const line of headerLines) {
    const i = line.indexOf(":");
    if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  let payload = rest.join("\r\n\r\n");
  if (headers.get("transfer-encoding") === "chunked") payload = unchunk(payload);
  return { status: Number(statusLine.split(" ")[1]), headers, body: payload };
}

function unchunk(text: string): string {
  let out = "";
  let rest = text;
  while (rest.length > 0) {
    const nl = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, nl), 16);
    if (!size) break;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
  return out;
}

/** A parsed JSON body: tests read into it freely and assert on what they find. */
// deno-lint-ignore no-explicit-any
export type Json = any;

/** Reads a JSON response body with its status, for compact assertions. */
export async function json(res: Response): Promise<{ status: number; body: Json }> {
  return { status: res.status, body: await res.json() };
}

/** Calls a platform running in a child process with `apikey` and a JSON body (if any); status and parsed body. */
export async function callChild(
  child: ChildPlatform,
  apikey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  return await json(
    await fetch(`${child.url}${path}`, {
      method,
      headers: { apikey, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}
