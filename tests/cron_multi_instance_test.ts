import { startCronTicker } from "../workers/cron_ticker.ts";
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, makeSandbox, serverUrl, spawnPlatform, startPlatform } from "./harness.ts";
import { FUNCTIONS } from "./jobs_fixtures.ts";

const SECONDS = 4;

/** The jobs of each tick of the every-second entry, read through the owner SQL route. */
async function ticks(call: (path: string, body?: unknown) => Promise<Json>): Promise<Json[]> {
  const res = await call("/v1/sql", {
    query: `select cron_tick, count(*)::int as jobs from platform.jobs where cron_id is not null
            group by cron_tick order by cron_tick`,
  });
  assertEquals(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
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
        const rows = await ticks((path, body) => call(path, body));
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
        const rows = await ticks(call);
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
