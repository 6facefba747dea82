import postgres from "postgres";
import { startCronTicker } from "../workers/cron_ticker.ts";
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, makeSandbox, serverUrl, spawnPlatform, startPlatform } from "./harness.ts";
import { FUNCTIONS } from "./jobs_fixtures.ts";

const SECONDS = 4;

const TICKS_SQL = `select cron_tick, count(*)::int as jobs from platform.jobs where cron_id is not null
  group by cron_tick order by cron_tick`;

/** The jobs of each tick, read from the platform's own table straight on the project database. */
async function ticks(query: (sql: string) => Promise<Json[]>): Promise<Json[]> {
  return await query(TICKS_SQL);
}

/** Reads the default project's database of a sandbox on PostgreSQL (the children hold no in-process handle). */
async function projectQuery(databaseUrl: string, sql: string): Promise<Json[]> {
  const url = new URL(databaseUrl);
  url.pathname = `${url.pathname}_default`;
  const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    return [...await db.unsafe(sql)];
  } finally {
    await db.end();
  }
}

Deno.test("cron fires once per tick with two instances on one database", async (t) => {
  if (serverUrl) {
    await t.step("two platform processes on one PostgreSQL and one KV path: one job per tick", async () => {
      const sandbox = await makeSandbox();
      const a = await spawnPlatform(sandbox.env);
      const b = await spawnPlatform(sandbox.env);
      try {
        const call = async (path: string, body?: unknown, base = a.url) =>
          await json(
            await fetch(`${base}${path}`, {
              method: "POST",
              headers: { apikey: sandbox.secretKey, "content-type": "application/json" },
              body: JSON.stringify(body),
            }),
          );
        const fn = await call("/v1/functions", { name: "tick", runtime: "deno", code: FUNCTIONS.fine });
        assertEquals(fn.status, 201);
        const created = await call("/v1/functions/cron", {
          name: "both",
          schedule: "* * * * * *",
          function_name: "tick",
        }, b.url);
        assertEquals(created.status, 201);
        const from = Date.parse(created.body.data.created_at);
        await new Promise((r) => setTimeout(r, SECONDS * 1000 + 500));
        const del = await fetch(`${a.url}/v1/functions/cron/both`, {
          method: "DELETE",
          headers: { apikey: sandbox.secretKey },
        });
        assertEquals(del.status, 200);
        await del.body?.cancel();
        const expected = Math.floor(Date.now() / 1000) - Math.floor(from / 1000);
        const rows = await ticks((sql) => projectQuery(sandbox.env.DATABASE_URL!, sql));
        assert(rows.every((r) => r.jobs === 1), JSON.stringify(rows));
        assert(
          rows.length === expected || rows.length === expected - 1,
          `${rows.length} ticks of ${expected}`,
        );
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        await sandbox.destroy();
      }
    });
  } else {
    // PGlite is one process per data directory, so two processes cannot share it: here two tickers race on the
    // one database instead, which exercises the same atomic claim.
    await t.step("two tickers on one PGlite database: one job per tick", async () => {
      const p = await startPlatform({}, { workers: true });
      const second = startCronTicker(p.platform);
      try {
        const call = async (path: string, body?: unknown) =>
          await json(await p.fetch(path, { method: "POST", headers: { apikey: p.secretKey }, json: body }));
        assertEquals(
          (await call("/v1/functions", { name: "tick", runtime: "deno", code: FUNCTIONS.fine })).status,
          201,
        );
        const created = await call("/v1/functions/cron", {
          name: "both",
          schedule: "* * * * * *",
          function_name: "tick",
        });
        const from = Date.parse(created.body.data.created_at);
        await new Promise((r) => setTimeout(r, SECONDS * 1000 + 500));
        await p.fetch("/v1/functions/cron/both", { method: "DELETE", headers: { apikey: p.secretKey } });
        const expected = Math.floor(Date.now() / 1000) - Math.floor(from / 1000);
        const rows = await ticks((sql) => p.internalSql(sql));
        assert(rows.every((r) => r.jobs === 1), JSON.stringify(rows));
        assert(
          rows.length === expected || rows.length === expected - 1,
          `${rows.length} ticks of ${expected}`,
        );
      } finally {
        await second.stop();
        await p.close();
      }
    });
  }
});
