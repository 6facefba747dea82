import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";
import { deploy, FUNCTIONS, waitUntil } from "./jobs_fixtures.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

Deno.test("cron: schedules, updates, ticks, deletion, deactivation, a missed tick", async (t) => {
  const p = await startPlatform({}, { workers: true });
  const sk = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown) =>
    await json(await p.fetch(path, { method, headers: sk, json: body }));
  const jobsOf = async (fn: string): Promise<Json[]> =>
    ((await call("GET", "/v1/functions/jobs?limit=500")).body.data as Json[]).filter((j) =>
      j.function_name === fn
    );
  const entry = async (name: string): Promise<Json> =>
    ((await call("GET", "/v1/functions/cron")).body.data as Json[]).find((e) => e.name === name);
  try {
    for (const name of ["tick-a", "tick-b", "tick-c", "tick-d"]) {
      await deploy(p, p.secretKey, name, FUNCTIONS.fine);
    }

    await t.step("invalid schedules and bodies are 400 and create nothing", async () => {
      const bad: unknown[] = [
        { name: "bad", schedule: "* * *", function_name: "tick-a" },
        { name: "bad", schedule: "61 * * * * *", function_name: "tick-a" },
        { name: "bad", schedule: "every day at noon", function_name: "tick-a" },
        { name: "bad", schedule: "* * * * * * *", function_name: "tick-a" },
        { name: "bad", schedule: "0 0 32 * *", function_name: "tick-a" },
        { name: "bad", schedule: "@fortnightly", function_name: "tick-a" },
        { name: "bad", schedule: "", function_name: "tick-a" },
        { name: "bad", schedule: "@daily" },
        { name: "no spaces allowed", schedule: "@daily", function_name: "tick-a" },
        { name: "bad", schedule: "@daily", function_name: "tick-a", extra: 1 },
      ];
      for (const body of bad) {
        const res = await call("POST", "/v1/functions/cron", body);
        assertEquals(res.status, 400, JSON.stringify(body));
        assertEquals(res.body.error.code, "VALIDATION_ERROR");
      }
      const text = await call("POST", "/v1/functions/cron", {
        name: "bad",
        schedule: "61 * * * * *",
        function_name: "x",
      });
      assertMatch(text.body.error.message, /schedule/);
      assertEquals((await call("GET", "/v1/functions/cron")).body.data, []);
    });

    await t.step(
      "5 fields, 6 fields and nicknames are stored as 6 fields; POST on a name updates it",
      async () => {
        const cases: [string, string][] = [
          ["*/15 * * * *", "0 */15 * * * *"],
          ["30 0 12 * * 1", "30 0 12 * * 1"],
          ["@hourly", "0 0 * * * *"],
          ["@daily", "0 0 0 * * *"],
          ["@weekly", "0 0 0 * * 0"],
          ["@monthly", "0 0 0 1 * *"],
          ["@yearly", "0 0 0 1 1 *"],
        ];
        const first = await call("POST", "/v1/functions/cron", {
          name: "report",
          schedule: "@daily",
          function_name: "tick-d",
          payload: { kind: "daily" },
        });
        assertEquals(first.status, 201);
        const e = first.body.data;
        assertEquals(Object.keys(e).sort(), [
          "created_at",
          "function_name",
          "id",
          "is_active",
          "last_run",
          "name",
          "next_run",
          "payload",
          "project_id",
          "schedule",
        ]);
        assertEquals(e.project_id, "default");
        assertEquals(e.is_active, true);
        assertEquals(e.last_run, null);
        assertEquals(e.payload, { kind: "daily" });
        assertMatch(e.created_at, ISO);
        assertMatch(e.next_run, ISO);
        assert(e.next_run.endsWith("T00:00:00.000Z"), "UTC midnight");
        for (const [input, stored] of cases) {
          const res = await call("POST", "/v1/functions/cron", {
            name: "report",
            schedule: input,
            function_name: "tick-d",
          });
          assertEquals(res.status, 200, input);
          assertEquals(res.body.data.schedule, stored, input);
          assertEquals(res.body.data.id, e.id, "same entry, updated");
          assert(Date.parse(res.body.data.next_run) > Date.now(), input);
        }
        const list = (await call("GET", "/v1/functions/cron")).body.data as Json[];
        assertEquals(list.length, 1);
        assertEquals(list[0].schedule, "0 0 0 1 1 *");
      },
    );

    await t.step("DELETE of an unknown name is 404", async () => {
      const res = await call("DELETE", "/v1/functions/cron/nope");
      assertEquals(res.status, 404);
      assertEquals(res.body.error.code, "NOT_FOUND");
    });

    await t.step("a 6-field every-second schedule fires once per second; deleted, it stops", async () => {
      const created = await call("POST", "/v1/functions/cron", {
        name: "every-second",
        schedule: "* * * * * *",
        function_name: "tick-a",
        payload: { from: "cron" },
      });
      assertEquals(created.status, 201);
      const from = Date.parse(created.body.data.created_at);
      await new Promise((r) => setTimeout(r, 3_500));
      const deleted = await call("DELETE", "/v1/functions/cron/every-second");
      assertEquals(deleted.status, 200);
      assertEquals(deleted.body.data, null);
      const until = Date.now();
      // Ticks are the whole seconds after creation up to the deletion; the last may not have fired yet.
      const ticks = Math.floor(until / 1000) - Math.floor(from / 1000);
      const jobs = await jobsOf("tick-a");
      assert(jobs.length === ticks || jobs.length === ticks - 1, `${jobs.length} jobs for ${ticks} ticks`);
      assert(jobs.every((j) => j.payload?.from === "cron"), "the entry's payload is the job's");
      await waitUntil(
        "cron jobs to complete",
        async () => (await jobsOf("tick-a")).every((j) => j.status === "completed"),
      );
      await new Promise((r) => setTimeout(r, 1_500));
      assertEquals((await jobsOf("tick-a")).length, jobs.length, "no job after deletion");
    });

    await t.step("a deactivated entry stops firing; last_run and next_run are kept", async () => {
      await call("POST", "/v1/functions/cron", {
        name: "pausable",
        schedule: "* * * * * *",
        function_name: "tick-b",
      });
      await waitUntil("a first tick", async () => (await jobsOf("tick-b")).length >= 1);
      const running = await entry("pausable");
      assertMatch(running.last_run, ISO);
      assert(Date.parse(running.next_run) > Date.parse(running.last_run));
      const paused = await call("POST", "/v1/functions/cron", {
        name: "pausable",
        schedule: "* * * * * *",
        function_name: "tick-b",
        is_active: false,
      });
      assertEquals(paused.body.data.is_active, false);
      const count = (await jobsOf("tick-b")).length;
      await new Promise((r) => setTimeout(r, 2_000));
      assertEquals((await jobsOf("tick-b")).length, count, "no job while inactive");
    });

    await t.step("after downtime a missed tick runs once, not once per missed tick", async () => {
      // The schedule's own next tick (at second 0) must not fall inside this step: it would add a second job.
      const toNextMinute = 60_000 - Date.now() % 60_000;
      if (toNextMinute < 20_000) await new Promise((r) => setTimeout(r, toNextMinute + 500));
      await call("POST", "/v1/functions/cron", {
        name: "minutely",
        schedule: "0 * * * * *",
        function_name: "tick-c",
      });
      // As if the platform had been down for ten minutes: ten ticks were missed.
      // Straight on the database: the platform's own table, which the owner's SQL may not touch.
      await p.internalSql(
        "update platform.cron_entries set next_run = now() - interval '10 minutes' where name = 'minutely'",
      );
      await waitUntil("the missed tick", async () => (await jobsOf("tick-c")).length >= 1);
      await new Promise((r) => setTimeout(r, 1_500));
      assertEquals((await jobsOf("tick-c")).length, 1);
      const e = await entry("minutely");
      assert(Date.parse(e.next_run) > Date.now(), "the next run is in the future");
      assert(e.next_run.endsWith(":00.000Z"));
    });
  } finally {
    await p.close();
  }
});
