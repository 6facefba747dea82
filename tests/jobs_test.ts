import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";
import { deploy, FUNCTIONS, waitUntil } from "./jobs_fixtures.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const JOB_FIELDS = [
  "attempts",
  "completed_at",
  "created_at",
  "error",
  "function_name",
  "id",
  "max_attempts",
  "payload",
  "project_id",
  "scheduled_at",
  "started_at",
  "status",
];

Deno.test("jobs: run, retry with backoff, dead-letter queue, requeue, bounds and roles", async (t) => {
  // Short leases swept every second: a long attempt must keep its lease, and no step may see a job run twice.
  const p = await startPlatform(
    { JOBS_LEASE_SECS: "1", JOBS_SWEEP_SECS: "1", INVOKE_MAX_BODY_BYTES: "2048" },
    {
      workers: true,
    },
  );
  const sk = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown, headers: HeadersInit = sk) =>
    await json(await p.fetch(path, { method, headers, json: body }));
  const job = async (id: string): Promise<Json> => (await call("GET", `/v1/functions/jobs/${id}`)).body.data;
  const until = async (id: string, statuses: string[]): Promise<Json> => {
    let last: Json;
    await waitUntil(`job ${id} to be ${statuses.join("|")}`, async () => {
      last = await job(id);
      return statuses.includes(last.status);
    });
    return last;
  };
  const create = async (body: Record<string, unknown>): Promise<Json> => {
    const res = await call("POST", "/v1/functions/jobs", body);
    assertEquals(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  try {
    for (const [name, code] of Object.entries(FUNCTIONS)) await deploy(p, p.secretKey, name, code);

    await t.step("anon and authenticated get 403 on every job and cron route; admin passes", async () => {
      const routes: [string, string, unknown?][] = [
        ["POST", "/v1/functions/jobs", { function_name: "fine" }],
        ["GET", "/v1/functions/jobs"],
        ["GET", `/v1/functions/jobs/${crypto.randomUUID()}`],
        ["POST", `/v1/functions/jobs/${crypto.randomUUID()}/retry`],
        ["GET", "/v1/functions/jobs/dlq"],
        ["POST", "/v1/functions/jobs/dlq/requeue"],
        ["POST", "/v1/functions/cron", { name: "x", schedule: "@daily", function_name: "fine" }],
        ["GET", "/v1/functions/cron"],
        ["DELETE", "/v1/functions/cron/x"],
      ];
      const signup = await call("POST", "/v1/auth/signup", {
        email: "jobs@example.com",
        password: "password-123",
      }, { apikey: p.publicKey });
      const userToken = signup.body.data.session.access_token;
      for (const [method, path, body] of routes) {
        const anon = await call(method, path, body, { apikey: p.publicKey });
        assertEquals(anon.status, 403, `${method} ${path} as anon`);
        assertEquals(anon.body.error.code, "FORBIDDEN");
        assertMatch(anon.body.error.message, /service_role/);
        const user = await call(method, path, body, {
          apikey: p.publicKey,
          authorization: `Bearer ${userToken}`,
        });
        assertEquals(user.status, 403, `${method} ${path} as authenticated`);
      }
      const admin = await call("GET", "/v1/functions/jobs", undefined, {
        authorization: `Bearer ${await p.adminToken()}`,
      });
      assertEquals(admin.status, 200);
      const long = await call("GET", "/v1/functions/default/jobs?limit=1");
      assertEquals(long.status, 200, "the long form /v1/functions/{project_id}/jobs works too");
    });

    await t.step("bad input is a 400 and creates nothing", async () => {
      const before = (await call("GET", "/v1/functions/jobs?limit=500")).body.data.length;
      const bodies: unknown[] = [
        {},
        { function_name: "Bad Name" },
        { function_name: "fine", delay_secs: -1 },
        { function_name: "fine", delay_secs: 604_801 },
        { function_name: "fine", delay_secs: 1.5 },
        { function_name: "fine", max_attempts: 0 },
        { function_name: "fine", max_attempts: 26 },
        { function_name: "fine", extra: true },
        { function_name: "fine", payload: { big: "x".repeat(3000) } },
      ];
      for (const body of bodies) {
        const res = await call("POST", "/v1/functions/jobs", body);
        assertEquals(res.status, 400, JSON.stringify(body));
        assertEquals(res.body.error.code, "VALIDATION_ERROR");
      }
      for (const q of ["limit=0", "limit=501", "limit=abc", "limit=-5", "status=sleeping"]) {
        assertEquals((await call("GET", `/v1/functions/jobs?${q}`)).status, 400, q);
        if (q.startsWith("limit")) {
          assertEquals((await call("GET", `/v1/functions/jobs/dlq?${q}`)).status, 400, q);
        }
      }
      assertEquals((await call("GET", "/v1/functions/jobs?limit=500")).body.data.length, before);
      assertEquals((await call("GET", `/v1/functions/jobs/${crypto.randomUUID()}`)).status, 404);
      assertEquals((await call("GET", "/v1/functions/jobs/not-a-uuid")).status, 404);
      assertEquals((await call("POST", `/v1/functions/jobs/${crypto.randomUUID()}/retry`)).status, 404);
    });

    await t.step("a job runs its function with POST /, the JSON payload and the job headers", async () => {
      const created = await create({ function_name: "check", payload: { hello: "world" } });
      assertEquals(Object.keys(created).sort(), JOB_FIELDS);
      assertEquals(created.project_id, "default");
      assertEquals(created.max_attempts, 3);
      assertEquals(created.attempts, 0);
      assertMatch(created.created_at, ISO);
      assertMatch(created.scheduled_at, ISO);
      const done = await until(created.id, ["completed", "failed", "dead"]);
      assertEquals(done.status, "completed", done.error);
      assertEquals(done.attempts, 1);
      assertEquals(done.error, null);
      assertMatch(done.started_at, ISO);
      assertMatch(done.completed_at, ISO);
      assertEquals(done.payload, { hello: "world" });
    });

    await t.step("a delayed job runs no earlier than its delay", async () => {
      const created = await create({ function_name: "fine", delay_secs: 2 });
      assertEquals(created.status, "pending");
      const done = await until(created.id, ["completed"]);
      const waited = Date.parse(done.started_at) - Date.parse(created.created_at);
      assert(waited >= 2000, `started after ${waited} ms`);
    });

    await t.step("a function that fails twice then succeeds completes on attempt 3", async () => {
      const created = await create({ function_name: "flaky", max_attempts: 5 });
      const failed = await until(created.id, ["failed"]);
      assertEquals(failed.error, "Function answered 500: attempt 1");
      assert(Date.parse(failed.scheduled_at) > Date.parse(failed.started_at), "the retry is scheduled later");
      const done = await until(created.id, ["completed", "dead"]);
      assertEquals(done.status, "completed");
      assertEquals(done.attempts, 3);
    });

    let deadId = "";
    await t.step("one that always fails ends dead after max_attempts and appears in the DLQ", async () => {
      const created = await create({ function_name: "broken", max_attempts: 2, payload: { n: 1 } });
      deadId = created.id;
      const dead = await until(created.id, ["dead"]);
      assertEquals(dead.attempts, 2);
      assertEquals(dead.error, "Function answered 500: always broken");
      const dlq = await call("GET", "/v1/functions/jobs/dlq");
      assertEquals(dlq.status, 200);
      assert(dlq.body.data.some((j: Json) => j.id === created.id), "the dead job is in the DLQ");
      assert(dlq.body.data.every((j: Json) => j.status === "dead"));
      assertEquals((await call("GET", "/v1/functions/jobs/dlq?limit=1")).body.data.length, 1);
    });

    await t.step("retry brings a job back to pending with attempts reset, and it runs", async () => {
      const res = await call("POST", `/v1/functions/jobs/${deadId}/retry`);
      assertEquals(res.status, 200);
      assertEquals(res.body.data.attempts, 0);
      assert(["pending", "running", "failed"].includes(res.body.data.status), res.body.data.status);
      assertEquals(
        res.body.data.error,
        "Function answered 500: always broken",
        "error kept until the next attempt",
      );
      const dead = await until(deadId, ["dead"]);
      assertEquals(dead.attempts, 2, "it ran max_attempts times again");
    });

    await t.step("requeue puts every dead job back; once the function is fixed they complete", async () => {
      const second = await create({ function_name: "broken", max_attempts: 1 });
      await until(second.id, ["dead"]);
      const deadBefore = (await call("GET", "/v1/functions/jobs/dlq?limit=500")).body.data.length;
      assert(deadBefore >= 2);
      await deploy(p, p.secretKey, "broken", FUNCTIONS.fine); // the fix
      const res = await call("POST", "/v1/functions/jobs/dlq/requeue");
      assertEquals(res.status, 200);
      assertEquals(res.body.data, { requeued: deadBefore });
      for (const id of [deadId, second.id]) {
        const done = await until(id, ["completed"]);
        assertEquals(done.attempts, 1);
        assertEquals(done.error, null, "the error is cleared by the attempt that succeeds");
      }
      assertEquals((await call("GET", "/v1/functions/jobs/dlq")).body.data.length, 0);
      assertEquals((await call("POST", "/v1/functions/jobs/dlq/requeue")).body.data, { requeued: 0 });
    });

    await t.step("status filter and limit", async () => {
      const all = (await call("GET", "/v1/functions/jobs?limit=500")).body.data as Json[];
      assert(all.length >= 5);
      const defaults = (await call("GET", "/v1/functions/jobs")).body.data as Json[];
      assertEquals(defaults.length, Math.min(50, all.length));
      assertEquals((await call("GET", "/v1/functions/jobs?limit=2")).body.data.length, 2);
      const completed = (await call("GET", "/v1/functions/jobs?status=completed&limit=500")).body
        .data as Json[];
      assertEquals(completed.length, all.filter((j) => j.status === "completed").length);
      assert(completed.every((j) => j.status === "completed"));
      assertEquals((await call("GET", "/v1/functions/jobs?status=running")).body.data, []);
    });

    await t.step("a job for an inactive or deleted function fails with NOT_FOUND", async () => {
      await deploy(p, p.secretKey, "paused", FUNCTIONS.fine);
      const patched = await call("PATCH", "/v1/functions/paused", { is_active: false });
      assertEquals(patched.status, 200);
      const inactive = await create({ function_name: "paused", max_attempts: 2 });
      const failed = await until(inactive.id, ["failed", "dead"]);
      assertEquals(failed.status, "failed", "an attempt with attempts left is failed, retried later");
      assertMatch(failed.error, /^NOT_FOUND: Function "paused" does not exist or is not active/);
      assertEquals((await until(inactive.id, ["dead"])).attempts, 2);

      await deploy(p, p.secretKey, "gone", FUNCTIONS.fine);
      assertEquals((await call("DELETE", "/v1/functions/gone")).status, 200);
      const deleted = await create({ function_name: "gone", max_attempts: 1 });
      const dead = await until(deleted.id, ["dead"]);
      assertMatch(dead.error, /^NOT_FOUND: Function "gone" does not exist or is not active/);
      const never = await create({ function_name: "never-deployed", max_attempts: 1 });
      assertMatch((await until(never.id, ["dead"])).error, /^NOT_FOUND/);
    });

    await t.step("an attempt longer than its lease renews it and runs once", async () => {
      await deploy(
        p,
        p.secretKey,
        "long",
        `export default { async fetch() {
        await new Promise((r) => setTimeout(r, 2500)); return new Response("done"); } };`,
      );
      const created = await create({ function_name: "long" });
      const done = await until(created.id, ["completed", "failed", "dead"]);
      assertEquals(done.status, "completed", done.error);
      assertEquals(done.attempts, 1, "the sweep did not take the attempt over");
    });

    await t.step("completed jobs are deleted after JOBS_RETENTION_DAYS (7); dead jobs stay", async () => {
      const old = await create({ function_name: "fine" });
      await until(old.id, ["completed"]);
      const dead = await create({ function_name: "broken-again", max_attempts: 1 });
      await until(dead.id, ["dead"]);
      // Straight on the database: the platform's own table, which the owner's SQL may not touch.
      await p.internalSql(
        `update platform.jobs set completed_at = now() - interval '8 days', created_at = now() - interval '8 days'
         where id in ($1, $2)`,
        [old.id, dead.id],
      );
      await waitUntil(
        "the sweep to prune",
        async () => (await call("GET", `/v1/functions/jobs/${old.id}`)).status === 404,
      );
      assertEquals((await job(dead.id)).status, "dead");
    });

    await t.step("a running job cannot be retried (409)", async () => {
      await deploy(
        p,
        p.secretKey,
        "slow",
        `export default { async fetch() {
        await new Promise((r) => setTimeout(r, 1500)); return new Response("done"); } };`,
      );
      const created = await create({ function_name: "slow" });
      await until(created.id, ["running"]);
      const res = await call("POST", `/v1/functions/jobs/${created.id}/retry`);
      assertEquals(res.status, 409);
      assertEquals(res.body.error.code, "CONFLICT");
      assertEquals((await until(created.id, ["completed"])).attempts, 1);
    });
  } finally {
    await p.close();
  }
});
