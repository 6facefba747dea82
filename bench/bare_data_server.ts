/**
 * The bare baseline of the data benchmark (bench/data.ts), in a process of its own as a plain handler runs: a
 * `Deno.serve` + postgres.js (or PGlite) handler that answers GET with the read and POST with the insert, running
 * the same SQL the platform runs, compiled by the platform's own parser, compiler and schema introspection, with
 * the same first statement (`set_config` of the role, the caller's JWT claims and the statement timeout).
 *
 * Each request runs the plain way: BEGIN, the setup statement, the statement and COMMIT awaited one by one —
 * `sql.begin` on PostgreSQL, each statement prepared as postgres.js prepares tagged queries by default; PGlite's
 * `transaction()` on PGlite, in this process, on its event loop. The platform sends the same statements pipelined
 * in one batch (Db.pipeline), prepared once per text, and on PGlite runs the engine on a thread of its own: the
 * difference includes those choices, not only overhead.
 *
 * The database: a PostgreSQL URL (the platform's project database itself), or a PGlite directory. The platform's
 * PGlite directory is held by its process, so on PGlite this handler opens its own, empty directory, and applies
 * the project migrations and `setupSql` (the same table, rows and policies) first.
 *
 * Usage: deno run -A bench/bare_data_server.ts '<json BareDataSpec>'; prints `listening <port>` once it answers,
 * and closes its database on SIGTERM.
 */
import { PGlite, types } from "@electric-sql/pglite";
import postgres from "postgres";
import type { Queryable } from "../db/driver.ts";
import { readMigrations } from "../db/migrate.ts";
import { Compiler } from "../db/rest/compile.ts";
import { parseQuery } from "../db/rest/parse.ts";
import { introspect } from "../db/rest/schema.ts";
import { transactionSetup } from "../services/data/data.ts";

/** What the bare handler serves, passed as its one argument (JSON). */
export interface BareDataSpec {
  /** The project database: a PostgreSQL URL, or `{ pglite: <an empty directory> }`. */
  database: string | { pglite: string };
  /** On PGlite: the SQL that creates the table, its rows and policies (run after the project migrations). */
  setupSql?: string;
  /** The table read and written. */
  table: string;
  /** The read's query string (PostgREST grammar), e.g. `select=id,name&order=id&limit=20`. */
  readQuery: string;
  /** Further reads' query strings, answered when a GET's query string is one of them. */
  otherReads?: string[];
  /** The one row each insert writes. */
  insertRow: Record<string, unknown>;
  /** The caller's JWT claims (the role is `authenticated`). */
  claims: Record<string, unknown>;
  /** The platform's DATA_STATEMENT_TIMEOUT_MS. */
  statementTimeoutMs: number;
  /** The platform's DATA_MAX_ROWS. */
  maxRows: number;
  /** Connections in the PostgreSQL pool (the platform's PG_POOL_SIZE). */
  poolSize: number;
}

/** A transaction runner of the plain kind, and how to close its database. */
interface Store {
  /** Runs `fn` in one transaction: BEGIN, then `fn`'s statements awaited one by one, COMMIT. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Statements outside a transaction (the introspection). */
  db: Queryable;
  close(): Promise<void>;
}

function openServer(url: string, poolSize: number): Store {
  const sql = postgres(url, { max: poolSize, onnotice: () => {} });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    // Prepared, as postgres.js prepares a plain handler's tagged queries by default.
    query: async (text, params = []) =>
      await q.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }) as never,
    exec: async (text) => void await q.unsafe(text),
    execRows: () => Promise.resolve([]),
  });
  return {
    transaction: async (fn) => await sql.begin((tx) => fn(wrap(tx))) as never,
    db: wrap(sql),
    close: () => sql.end({ timeout: 5 }),
  };
}

async function openOwnPglite(dir: string, setupSql: string): Promise<Store> {
  const pg = await PGlite.create(dir, { parsers: { [types.INT8]: (value: string) => value } });
  await pg.exec("create schema if not exists platform");
  for (const m of await readMigrations("project")) await pg.exec(m.sql);
  await pg.exec(setupSql);
  const wrap = (q: Pick<PGlite, "query" | "exec">): Queryable => ({
    query: async (text, params) => (await q.query(text, params)).rows as never,
    exec: async (text) => void await q.exec(text),
    execRows: () => Promise.resolve([]),
  });
  return {
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    db: wrap(pg),
    close: () => pg.close(),
  };
}

if (import.meta.main) {
  const spec = JSON.parse(Deno.args[0]!) as BareDataSpec;
  const store = typeof spec.database === "string"
    ? openServer(spec.database, spec.poolSize)
    : await openOwnPglite(spec.database.pglite, spec.setupSql ?? "");
  // The same statements the platform's engine compiles.
  const cache = await introspect(store.db);
  const compileRead = (query: string) => {
    const compiler = new Compiler(cache, parseQuery(new URLSearchParams(query)));
    compiler.aggregatesEnabled = true;
    return compiler.read(spec.table, { count: false, maxRows: spec.maxRows });
  };
  const read = compileRead(spec.readQuery);
  const reads = new Map((spec.otherReads ?? []).map((q) => [q, compileRead(q)]));
  const insert = new Compiler(cache, parseQuery(new URLSearchParams())).insert(spec.table, {
    rows: [spec.insertRow],
    missingDefault: false,
    representation: true,
  });
  // The platform's own first statement: the same role, claims and settings.
  const setup = transactionSetup({ role: "authenticated", claims: spec.claims }, {
    timeoutMs: spec.statementTimeoutMs,
    settings: [],
  });
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen: ({ port }) => console.log(`listening ${port}`),
  }, async (req) => {
    const post = req.method === "POST";
    const st = post ? insert : reads.get(new URL(req.url).search.slice(1)) ?? read;
    if (post) await req.arrayBuffer();
    const body = await store.transaction(async (tx) => {
      await tx.query(setup.sql, setup.params);
      const [row] = await tx.query<{ body: string }>(st.sql, st.params);
      return row!.body;
    });
    return new Response(`{"data":${body},"meta":null}`, {
      status: post ? 201 : 200,
      headers: { "content-type": "application/json" },
    });
  });
  Deno.addSignalListener("SIGTERM", async () => {
    await server.shutdown();
    await store.close();
    Deno.exit(0);
  });
}
