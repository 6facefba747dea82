/**
 * Data API benchmark (issue 3). On a 10,000-row table with an RLS policy, as an authenticated user:
 *   read:   GET /v1/db/items?select=id,name,price&price=gt.50&order=id&limit=20
 *   insert: POST /v1/db/items with one row
 *   aggregate: GET /v1/db/items?select=public,count(),price.sum()  (grouped over every visible row)
 *   embed:  GET /v1/db/items?select=id,name,notes(id,body)&order=id&limit=20  (a to-many embed)
 * each against a bare Deno.serve handler that runs the same SQL with the same `set_config('role', …)` and
 * claims (bench/bare_data_server.ts: postgres.js on the platform's own project database on PostgreSQL; on
 * PGlite, a PGlite of its own with the same migrations, table, rows and policies), in the same run. Prints req/s,
 * p50/p90/p99 latency and the ratio platform / bare. Targets: ratio ≥ 70 %, p99 ≤ 25 ms at 50 connections.
 *
 * The platform (`main.ts`, spawned by the test harness) and the bare handler each run in a process of their own,
 * as users run them: neither shares the other's garbage, GC pauses or event loop, nor this process's.
 *
 * The bare handler is written as plain code would be: `sql.begin` (PGlite: `transaction()`), then each statement
 * awaited in turn, prepared as postgres.js prepares tagged queries by default. The platform sends the same
 * statements pipelined in one batch (Db.pipeline), prepared once per text, and on PGlite runs the engine on a
 * thread of its own: the difference includes those choices, not only overhead.
 *
 * Load comes from `wrk` (install it with `apt-get install -y wrk` or `brew install wrk`); without it, a
 * built-in Deno load generator runs in a child process (figures are then lower for both sides alike).
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/data.ts [--seconds 10] [--connections 50]
 *   DATABASE_URL=postgres://127.0.0.1:5432/postgres deno run -A … bench/data.ts   # PGlite, then PostgreSQL
 *   … bench/data.ts --databases postgres                                         # one of the two only
 */
import { decodeJwt } from "jose";
import { parseArgs } from "node:util";
import { loadConfig } from "../services/config.ts";
import { type ChildPlatform, makeSandbox, type Sandbox, serverUrl, spawnPlatform } from "../tests/harness.ts";
import type { LoadResult } from "./_load.ts";
import type { BareDataSpec } from "./bare_data_server.ts";
import { hasWrk, runWrk } from "./wrk.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    databases: { type: "string", default: "pglite,postgres" },
  },
});
const SECONDS = Number(values.seconds);
const WARMUP_SECONDS = 2;
const CONNECTIONS = Number(values.connections);
const READ_QUERY = "select=id,name,price&price=gt.50&order=id&limit=20";
const INSERT_ROW = { name: "bench", price: 42 };
const AGGREGATE_QUERY = "select=public,count(),price.sum()";
const EMBED_QUERY = "select=id,name,notes(id,body)&order=id&limit=20";

const SETUP_SQL = `
create table items (
  id serial primary key,
  name text not null,
  price numeric not null,
  owner uuid default auth.uid(),
  public boolean not null default true
);
insert into items (name, price, public) select 'item ' || g, (g % 100) + 0.5, g % 10 <> 0 from generate_series(1, 10000) g;
alter table items enable row level security;
create policy items_read on items for select using (public or owner = auth.uid());
create policy items_insert on items for insert to authenticated with check (owner = auth.uid());
create table notes (id serial primary key, item_id int not null references items (id), body text not null);
insert into notes (item_id, body) select g % 10000 + 1, 'note ' || g from generate_series(0, 19999) g;
create index on notes (item_id);
analyze items;
analyze notes;`;

async function load(
  wrk: boolean,
  req: { url: string; method: string; headers: Record<string, string>; body?: string },
  seconds = SECONDS,
): Promise<LoadResult> {
  if (wrk) {
    const r = await runWrk(req.url, {
      connections: CONNECTIONS,
      seconds,
      headers: req.headers,
      postJson: req.body,
    });
    return { requests: r.requests, rps: r.rps, p50: r.p50Ms, p90: r.p90Ms, p99: r.p99Ms, errors: r.errors };
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_load.ts", import.meta.url).pathname,
      JSON.stringify({
        ...req,
        connections: CONNECTIONS,
        seconds,
      }),
    ],
    stdout: "piped",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** A running bare_data_server.ts and how to stop it. */
interface BareData {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  stop(): Promise<void>;
}

/** Starts bench/bare_data_server.ts with `spec` and waits until it listens. */
async function startBareData(spec: BareDataSpec): Promise<BareData> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./bare_data_server.ts", import.meta.url).pathname, JSON.stringify(spec)],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
  };
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let port: string | undefined;
  while (!port) {
    const { value, done } = await reader.read();
    if (done) {
      await stop();
      throw new Error(`The bare handler exited before listening: ${seen}`);
    }
    seen += value;
    port = /listening (\d+)/.exec(seen)?.[1];
  }
  // Keep draining its stdout, so that nothing it prints can block it.
  (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {});
  return { origin: `http://127.0.0.1:${port}`, stop };
}

/** The platform's database URL with the project database's name (Databases.databaseName: `<db>_<ref>`). */
function projectDatabase(url: string, ref: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(`${decodeURIComponent(u.pathname.slice(1)) || "postgres"}_${ref}`)}`;
  return u.toString();
}

async function run(label: string, postgresPass: boolean, wrk: boolean): Promise<void> {
  // With DATABASE_URL set, the harness gives every sandbox a fresh database: the PGlite pass sets it empty (unset
  // for the platform, which also inherits this process's environment); destroy() drops the unused one.
  const sandbox: Sandbox = await makeSandbox(postgresPass ? {} : { DATABASE_URL: "" });
  const env = { ...sandbox.env, PG_POOL_SIZE: "10", DATA_AGGREGATES: "true" };
  const config = loadConfig(env);
  let platform: ChildPlatform | undefined;
  let bare: BareData | undefined;
  let bareDir: string | undefined;
  try {
    platform = await spawnPlatform(env);
    const call = (path: string, init: RequestInit) => fetch(`${platform!.url}${path}`, init);
    const sqlRes = await call("/v1/sql", {
      method: "POST",
      headers: { apikey: sandbox.secretKey, "content-type": "application/json" },
      body: JSON.stringify({ query: SETUP_SQL }),
    });
    if (sqlRes.status !== 200) throw new Error(`setup failed: ${await sqlRes.text()}`);
    await sqlRes.body?.cancel();
    const signupRes = await call("/v1/auth/signup", {
      method: "POST",
      headers: { apikey: sandbox.publicKey, "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1" }),
    });
    if (signupRes.status >= 300) throw new Error(`signup failed: ${await signupRes.text()}`);
    const token = (await signupRes.json()).data.session.access_token as string;
    // The claims the platform sets for this caller are the token's payload, which it verified.
    const claims = decodeJwt(token) as Record<string, unknown>;

    let database: BareDataSpec["database"];
    if (config.DATABASE_URL) database = projectDatabase(config.DATABASE_URL, config.DEFAULT_PROJECT_REF);
    else {
      bareDir = await Deno.makeTempDir({ prefix: "bench-bare-" });
      database = { pglite: bareDir };
    }
    bare = await startBareData({
      database,
      setupSql: SETUP_SQL,
      table: "items",
      readQuery: READ_QUERY,
      otherReads: [AGGREGATE_QUERY, EMBED_QUERY],
      insertRow: INSERT_ROW,
      claims,
      statementTimeoutMs: config.DATA_STATEMENT_TIMEOUT_MS,
      maxRows: config.DATA_MAX_ROWS,
      poolSize: config.PG_POOL_SIZE,
    });

    const headers = { apikey: sandbox.publicKey, authorization: `Bearer ${token}` };
    const postHeaders = { ...headers, "content-type": "application/json" };
    const body = JSON.stringify(INSERT_ROW);
    // The insert runs last: each side inserts as fast as it can, so a read after it would scan a table that
    // grew by what that side inserted (on PGlite each side has its own), and the faster side would read more.
    const cases = [
      { name: "read  ", method: "GET", path: `/v1/db/items?${READ_QUERY}`, headers, body: undefined },
      // The aggregate reads every row per request: at 50 connections its latency is the query's on either side,
      // so it is judged by its ratio alone.
      {
        name: "aggregate",
        method: "GET",
        path: `/v1/db/items?${AGGREGATE_QUERY}`,
        headers,
        body: undefined,
        ratioOnly: true,
      },
      { name: "embed ", method: "GET", path: `/v1/db/items?${EMBED_QUERY}`, headers, body: undefined },
      { name: "insert", method: "POST", path: "/v1/db/items", headers: postHeaders, body },
    ];
    for (const c of cases) {
      // Each side gets a short untimed run first: JIT compilation and first-use caches are not what is measured.
      await load(wrk, { url: `${bare.origin}${c.path}`, ...c }, WARMUP_SECONDS);
      const base = await load(wrk, { url: `${bare.origin}${c.path}`, ...c });
      await load(wrk, { url: `${platform.url}${c.path}`, ...c }, WARMUP_SECONDS);
      const plat = await load(wrk, { url: `${platform.url}${c.path}`, ...c });
      const ratio = plat.rps / base.rps;
      const ratioOnly = "ratioOnly" in c && c.ratioOnly;
      const verdict = ratio >= 0.7 && (ratioOnly || plat.p99 <= 25)
        ? `meets target${ratioOnly ? " (ratio)" : ""}`
        : "below target";
      const figures = (r: LoadResult) =>
        `${r.rps.toFixed(0).padStart(6)} req/s p50 ${r.p50.toFixed(1)} ms p90 ${r.p90.toFixed(1)} ms ` +
        `p99 ${r.p99.toFixed(1)} ms`;
      console.log(
        `${label} ${c.name}  platform ${figures(plat)} | bare ${figures(base)} | ` +
          `ratio ${(ratio * 100).toFixed(0)}% (${verdict})` +
          (plat.errors || base.errors ? ` errors platform ${plat.errors} bare ${base.errors}` : ""),
      );
    }
  } finally {
    await bare?.stop();
    if (bareDir) await Deno.remove(bareDir, { recursive: true }).catch(() => {});
    await platform?.stop("SIGTERM");
    // The sandbox's databases (`<db>`, `<db>_default`) and the project's owner role (`<db>_default_owner`),
    // cluster-wide, which would otherwise outlive its database; and the data dir.
    await sandbox.destroy();
  }
}

if (import.meta.main) {
  const wrk = await hasWrk();
  if (!wrk) {
    console.log("wrk not found: using the built-in load generator (install wrk: apt-get install -y wrk)");
  }
  console.log(
    `data API benchmark: ${CONNECTIONS} connections, ${SECONDS} s per run, ${wrk ? "wrk" : "Deno loader"}`,
  );
  console.log(
    "platform (main.ts) and bare handler each in a process of their own; bare: BEGIN; set_config; statement; " +
      "COMMIT awaited one by one (prepared on PostgreSQL; its own PGlite on PGlite); platform: the same " +
      "statements pipelined in one batch, prepared (PGlite on its own thread)",
  );
  const databases = values.databases.split(",");
  if (databases.includes("pglite")) await run("pglite  ", false, wrk);
  if (databases.includes("postgres")) {
    if (serverUrl) await run("postgres", true, wrk);
    else console.log("postgres: skipped (set DATABASE_URL to a server to measure PostgreSQL too)");
  }
}
