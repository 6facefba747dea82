/**
 * Data API benchmark (issue 3). On a 10,000-row table with an RLS policy, as an authenticated user:
 *   read:   GET /v1/db/items?select=id,name,price&price=gt.50&order=id&limit=20
 *   insert: POST /v1/db/items with one row
 * each against a bare Deno.serve handler that runs the same SQL with the same `set_config('role', …)` and
 * claims (postgres.js on the same PostgreSQL database; on PGlite, a PGlite of its own in this process with the
 * same migrations, table, rows and policies), in the same run. Prints req/s, p50/p99 latency and the ratio
 * platform / bare. Targets: ratio ≥ 70 %, p99 ≤ 25 ms at 50 connections.
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
 */
import { PGlite, type Transaction, types } from "@electric-sql/pglite";
import postgres from "postgres";
import { parseArgs } from "node:util";
import type { Queryable } from "../db/driver.ts";
import { readMigrations } from "../db/migrate.ts";
import { Compiler } from "../db/rest/compile.ts";
import { parseQuery } from "../db/rest/parse.ts";
import { createHandler } from "../routes/mod.ts";
import { loadConfig } from "../services/config.ts";
import { randomHex } from "../services/crypto.ts";
import { transactionSetup } from "../services/data/data.ts";
import { closePlatform, openPlatform, type Platform } from "../services/platform.ts";
import type { LoadResult } from "./_load.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "50" } },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const READ_QUERY = "select=id,name,price&price=gt.50&order=id&limit=20";

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
analyze items;`;

async function hasWrk(): Promise<boolean> {
  try {
    return (await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" })
      .output()) !== null;
  } catch {
    return false;
  }
}

function ms(text: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(text);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
}

async function load(
  wrk: boolean,
  req: { url: string; method: string; headers: Record<string, string>; body?: string },
): Promise<LoadResult> {
  if (wrk) {
    const script = await Deno.makeTempFile({ suffix: ".lua" });
    const lines = [`wrk.method = ${JSON.stringify(req.method)}`];
    for (const [k, v] of Object.entries(req.headers)) {
      lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
    }
    if (req.body) lines.push(`wrk.body = ${JSON.stringify(req.body)}`);
    lines.push(
      "local errors = 0",
      "response = function(status) if status >= 400 then errors = errors + 1 end end",
    );
    await Deno.writeTextFile(script, lines.join("\n"));
    const out = await new Deno.Command("wrk", {
      args: ["-t2", `-c${CONNECTIONS}`, `-d${SECONDS}s`, "--latency", "-s", script, req.url],
      stdout: "piped",
    }).output();
    await Deno.remove(script);
    const text = new TextDecoder().decode(out.stdout);
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
    const p50 = ms(/^\s*50%\s+(\S+)/m.exec(text)?.[1] ?? "");
    const p99 = ms(/^\s*99%\s+(\S+)/m.exec(text)?.[1] ?? "");
    const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
    const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? 0);
    return { requests, rps, p50, p99, errors: non2xx };
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_load.ts", import.meta.url).pathname,
      JSON.stringify({
        ...req,
        connections: CONNECTIONS,
        seconds: SECONDS,
      }),
    ],
    stdout: "piped",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

interface Setup {
  platform: Platform;
  cleanup: () => Promise<void>;
  projectUrl?: string;
}

async function open(databaseUrl: string | undefined): Promise<Setup> {
  const dataDir = await Deno.makeTempDir({ prefix: "bench-data-" });
  let url: string | undefined;
  let dbName: string | undefined;
  if (databaseUrl) {
    dbName = `bench_${randomHex(4)}`;
    const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${dbName}"`);
    await admin.end();
    const u = new URL(databaseUrl);
    u.pathname = `/${dbName}`;
    url = u.toString();
  }
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: url,
    PLATFORM_SECRET: `bench-secret-${randomHex(16)}`,
    ADMIN_EMAIL: "admin@example.com",
    ADMIN_PASSWORD: "admin-password-1",
    LOG_LEVEL: "error",
    QUIET: "true",
    PG_POOL_SIZE: "10",
  });
  const platform = await openPlatform(config);
  let projectUrl: string | undefined;
  if (url) {
    const u = new URL(url);
    u.pathname = `/${dbName}_default`;
    projectUrl = u.toString();
  }
  return {
    platform,
    projectUrl,
    cleanup: async () => {
      await closePlatform(platform);
      if (databaseUrl && dbName) {
        const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
        for (const name of [dbName, `${dbName}_default`]) {
          await admin.unsafe(`drop database if exists "${name}" with (force)`);
        }
        // The project's owner role is cluster-wide: it outlives its database unless dropped too.
        await admin.unsafe(`drop role if exists "${dbName}_default_owner"`);
        await admin.end();
      }
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

async function run(label: string, databaseUrl: string | undefined, wrk: boolean): Promise<void> {
  const { platform, cleanup, projectUrl } = await open(databaseUrl);
  const servers: Deno.HttpServer[] = [];
  let pool: postgres.Sql | undefined;
  let barePglite: { pg: PGlite; dir: string } | undefined;
  try {
    const handler = createHandler(platform);
    const keys = await platform.projects.keys("default");
    const call = (path: string, init: RequestInit) => handler(new Request(`http://127.0.0.1${path}`, init));
    const sqlRes = await call("/v1/sql", {
      method: "POST",
      headers: { apikey: keys.secret_key, "content-type": "application/json" },
      body: JSON.stringify({ query: SETUP_SQL }),
    });
    if (sqlRes.status !== 200) throw new Error(`setup failed: ${await sqlRes.text()}`);
    const signup = await (await call("/v1/auth/signup", {
      method: "POST",
      headers: { apikey: keys.public_key, "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1" }),
    })).json();
    const token = signup.data.session.access_token as string;
    const claims = await platform.tokens.verify(await platform.projects.get("default"), token);

    // The same statements the engine compiles, run by the bare handler.
    const db = await platform.dbs.project("default");
    const cache = await platform.data.schemas.get("default", db);
    const read = new Compiler(cache, parseQuery(new URLSearchParams(READ_QUERY))).read("items", {
      count: false,
      maxRows: platform.config.DATA_MAX_ROWS,
    });
    const insertBody = { name: "bench", price: 42 };
    const insert = new Compiler(cache, parseQuery(new URLSearchParams())).insert("items", {
      rows: [insertBody],
      missingDefault: false,
      representation: true,
    });
    // The platform's own first statement: the same role, claims and settings.
    const setup = transactionSetup(
      { role: "authenticated", claims },
      platform.config.DATA_STATEMENT_TIMEOUT_MS,
    );
    let runTx: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;
    if (projectUrl) {
      const sql = postgres(projectUrl, { max: platform.config.PG_POOL_SIZE, onnotice: () => {} });
      pool = sql;
      runTx = async (fn) =>
        await sql.begin((tx) =>
          fn({
            // Prepared, as postgres.js prepares a plain handler's tagged queries by default.
            query: async (text, params = []) =>
              await tx.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }) as never,
            exec: async (text) => void await tx.unsafe(text),
            execRows: () => Promise.resolve([]),
          })
        ) as never;
    } else {
      // The platform's PGlite directory is held by its engine thread, so the plain handler opens its own PGlite
      // as plain code would (in its process, on its event loop), with the same migrations, table, rows and
      // policies, and uses PGlite's transaction().
      const bareDir = await Deno.makeTempDir({ prefix: "bench-bare-" });
      const pg = await PGlite.create(bareDir, { parsers: { [types.INT8]: (value: string) => value } });
      barePglite = { pg, dir: bareDir };
      await pg.exec("create schema if not exists platform");
      for (const m of await readMigrations("project")) await pg.exec(m.sql);
      await pg.exec(SETUP_SQL);
      const wrap = (q: Transaction): Queryable => ({
        query: async (text, params) => (await q.query(text, params)).rows as never,
        exec: async (text) => void await q.exec(text),
        execRows: () => Promise.resolve([]),
      });
      runTx = (fn) => pg.transaction((tx) => fn(wrap(tx)));
    }
    const bare = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
      const st = req.method === "POST" ? insert : read;
      if (req.method === "POST") await req.arrayBuffer();
      const body = await runTx(async (tx) => {
        await tx.query(setup.sql, setup.params);
        const [row] = await tx.query<{ body: string }>(st.sql, st.params);
        return row!.body;
      });
      return new Response(`{"data":${body},"meta":null}`, {
        status: req.method === "POST" ? 201 : 200,
        headers: { "content-type": "application/json" },
      });
    });
    const app = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, handler);
    servers.push(bare, app);
    const headers = { apikey: keys.public_key, authorization: `Bearer ${token}` };
    const postHeaders = { ...headers, "content-type": "application/json" };
    const body = JSON.stringify(insertBody);
    const cases = [
      { name: "read  ", method: "GET", path: `/v1/db/items?${READ_QUERY}`, headers, body: undefined },
      { name: "insert", method: "POST", path: "/v1/db/items", headers: postHeaders, body },
    ];
    for (const c of cases) {
      const base = await load(wrk, { url: `http://127.0.0.1:${bare.addr.port}${c.path}`, ...c });
      const plat = await load(wrk, { url: `http://127.0.0.1:${app.addr.port}${c.path}`, ...c });
      const ratio = plat.rps / base.rps;
      const verdict = ratio >= 0.7 && plat.p99 <= 25 ? "meets target" : "below target";
      console.log(
        `${label} ${c.name}  platform ${plat.rps.toFixed(0).padStart(6)} req/s p50 ${
          plat.p50.toFixed(1)
        } ms ` +
          `p99 ${plat.p99.toFixed(1)} ms | bare ${base.rps.toFixed(0).padStart(6)} req/s p50 ${
            base.p50.toFixed(1)
          } ms p99 ${base.p99.toFixed(1)} ms | ratio ${(ratio * 100).toFixed(0)}% (${verdict})` +
          (plat.errors || base.errors ? ` errors platform ${plat.errors} bare ${base.errors}` : ""),
      );
    }
  } finally {
    for (const s of servers) await s.shutdown();
    await pool?.end();
    if (barePglite) {
      await barePglite.pg.close();
      await Deno.remove(barePglite.dir, { recursive: true });
    }
    await cleanup();
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
    "bare: BEGIN; set_config; statement; COMMIT awaited one by one (prepared on PostgreSQL; its own PGlite " +
      "on PGlite); platform: the same statements pipelined in one batch, prepared (PGlite on its own thread)",
  );
  await run("pglite  ", undefined, wrk);
  const url = Deno.env.get("DATABASE_URL");
  if (url) await run("postgres", url, wrk);
  else console.log("postgres: skipped (set DATABASE_URL to a server to measure PostgreSQL too)");
}
