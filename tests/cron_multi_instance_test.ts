import { startCronTicker } from "../workers/cron_ticker.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  type Json,
  json,
  makeSandbox,
  ownDataDir,
  projectSql,
  serverUrl,
  spawnPlatform,
  startPlatform,
} from "./harness.ts";
import { FUNCTIONS } from "./jobs_fixtures.ts";

/** How long the per-second schedule runs: a minute across the three processes, a few seconds in one. */
const CLUSTER_SECONDS = 60;
const SECONDS = 4;

const TICKS_SQL = `select cron_tick, count(*)::int as jobs from platform.jobs where cron_id is not null
  group by cron_tick order by cron_tick`;

/** The jobs of each tick, read from the platform's own table straight on the project database. */
async function ticks(query: (sql: string) => Promise<Json[]>): Promise<Json[]> {
  return await query(TICKS_SQL);
}

/** Whole seconds in [from, to] (milliseconds): the ticks a per-second schedule has in that span. */
function secondsIn(from: number, to: number): number {
  return Math.max(0, Math.floor(to / 1000) - Math.ceil(from / 1000) + 1);
}

/**
 * Each tick made one job, and the ticks are the schedule's seconds from its first run (`next_run`, computed by
 * the platform when it stored the entry) to the deletion, which fell between `before` and `after`. The last one
 * may be missing: a ticker claims a tick a moment after its second, and the deletion may come first.
 */
function assertOneJobPerTick(rows: Json[], firstRun: number, before: number, after: number): void {
  assert(rows.every((r) => r.jobs === 1), JSON.stringify(rows));
  const low = secondsIn(firstRun, before) - 1;
  const high = secondsIn(firstRun, after);
  assert(rows.length >= low && rows.length <= high, `${rows.length} ticks, expected ${low} to ${high}`);
}

Deno.test("cron fires once per tick with several instances on one database", async (t) => {
  if (serverUrl) {
    await t.step(
      "three platform processes sharing only PostgreSQL (own DATA_DIR and KV), every second for a minute: one job per tick",
      async () => {
        const sandbox = await makeSandbox();
        const places = [await ownDataDir(sandbox), await ownDataDir(sandbox)];
        const a = await spawnPlatform(sandbox.env);
        const b = await spawnPlatform(places[0]!.env);
        const c = await spawnPlatform(places[1]!.env);
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
          const firstRun = Date.parse(created.body.data.next_run);
          await new Promise((r) => setTimeout(r, CLUSTER_SECONDS * 1000 + 500));
          const before = Date.now();
          const del = await fetch(`${c.url}/v1/functions/cron/both`, {
            method: "DELETE",
            headers: { apikey: sandbox.secretKey },
          });
          assertEquals(del.status, 200);
          await del.body?.cancel();
          const after = Date.now();
          const rows = await ticks((sql) => projectSql(sandbox, sql));
          assertOneJobPerTick(rows, firstRun, before, after);
        } finally {
          await Promise.all([a.stop(), b.stop(), c.stop()]);
          for (const place of places) await place.destroy();
          await sandbox.destroy();
        }
      },
    );
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
        const firstRun = Date.parse(created.body.data.next_run);
        await new Promise((r) => setTimeout(r, SECONDS * 1000 + 500));
        const before = Date.now();
        await p.fetch("/v1/functions/cron/both", { method: "DELETE", headers: { apikey: p.secretKey } });
        const after = Date.now();
        const rows = await ticks((sql) => p.internalSql(sql));
        assertOneJobPerTick(rows, firstRun, before, after);
      } finally {
        await second.stop();
        await p.close();
      }
    });
  }
});
