import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  callChild,
  type ChildPlatform,
  type Json,
  makeSandbox,
  ownDataDir,
  projectSql,
  type Sandbox,
  serverUrl,
  spawnPlatform,
} from "./harness.ts";
import { assertEffectivelyOnce, effectServer, waitUntil } from "./jobs_fixtures.ts";
import { webhookReceiver } from "./notification_fakes.ts";

// Three instances share nothing but PostgreSQL: each has its own DATA_DIR and KV_PATH (so its own Deno KV
// queue) and its own port; requests go to them in turn. PGlite lives in one process, so there is no cluster
// to test on it: jobs_crash_test.ts and notifications_crash_test.ts test one instance killed and restarted.

const JOBS = 2000;
const NOTIFICATIONS = 500;
const JOBS_CONCURRENCY = 32;
const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

/** Sends `count` requests, `parallel` at a time, the i-th to instance i mod n; returns the answers in order. */
async function roundRobin(
  instances: ChildPlatform[],
  count: number,
  send: (instance: ChildPlatform, i: number) => Promise<{ status: number; body: Json }>,
  parallel = 24,
): Promise<{ status: number; body: Json }[]> {
  const answers: { status: number; body: Json }[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      answers[i] = await send(instances[i % instances.length]!, i);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return answers;
}

// Instances that share a database are processes on one PostgreSQL: PGlite keeps its data in one process, so
// these scenarios exist only when the suite runs against PostgreSQL.
if (serverUrl) {
  Deno.test({
    name:
      "three instances on one PostgreSQL: jobs and notifications run once, a killed instance loses nothing",
    fn: async (t) => {
      const effects = effectServer(20);
      const hook = webhookReceiver(SECRET);
      const sandbox = await makeSandbox({
        FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1",
        NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
        JOBS_CONCURRENCY: String(JOBS_CONCURRENCY),
        JOBS_LEASE_SECS: "2",
        JOBS_SWEEP_SECS: "1",
        NOTIFY_LEASE_SECS: "2",
        NOTIFY_SWEEP_SECS: "1",
      });
      const places: Sandbox[] = [sandbox, await ownDataDir(sandbox), await ownDataDir(sandbox)];
      const instances: ChildPlatform[] = [];
      const call = (child: ChildPlatform, method: string, path: string, body?: unknown) =>
        callChild(child, sandbox.secretKey, method, path, body);
      try {
        for (const place of places) instances.push(await spawnPlatform(place.env));
        assertEquals(new Set(places.map((p) => p.env.KV_PATH ?? `${p.env.DATA_DIR}/kv.sqlite3`)).size, 3);
        assertEquals(new Set(instances.map((i) => i.port)).size, 3);
        const [a] = instances as [ChildPlatform];

        await t.step(`${NOTIFICATIONS} webhooks sent through the three: each delivered once`, async () => {
          assertEquals(
            (await call(a, "PATCH", "/v1/notifications/settings", { webhook: { secret: SECRET } })).status,
            200,
          );
          const sent = await roundRobin(
            instances,
            NOTIFICATIONS,
            (p, i) =>
              call(p, "POST", "/v1/notifications/send", {
                channel: "webhook",
                recipient: `${hook.url}/hook`,
                event: "cluster.test",
                payload: { i },
              }),
          );
          for (const res of sent) assertEquals(res.status, 200, JSON.stringify(res.body));
          assertEquals(new Set(sent.map((res) => res.body.data.id)).size, NOTIFICATIONS);
          await waitUntil("every webhook to be sent", async () => {
            const [row] = await projectSql(
              sandbox,
              "select count(*)::int as n from notifications.messages where status in ('sent', 'delivered')",
            );
            return row.n === NOTIFICATIONS;
          }, 120_000);
          const perIndex = new Map<number, number>();
          for (const w of hook.arrived) {
            const i = (w.data as { i: number }).i;
            perIndex.set(i, (perIndex.get(i) ?? 0) + 1);
          }
          assertEquals(perIndex.size, NOTIFICATIONS, "every notification was delivered");
          assert([...perIndex.values()].every((n) => n === 1), "none was delivered twice");
          assertEquals(hook.received.length, NOTIFICATIONS);
          assertEquals(hook.rejected, 0);
        });

        await t.step(
          `${JOBS} jobs posted to the three, one killed mid-run: each completed once`,
          async () => {
            const fn = await call(a, "POST", "/v1/functions", {
              name: "effect",
              runtime: "deno",
              permissions: { allow_net: [`127.0.0.1:${effects.port}`] },
              code: effects.code,
            });
            assertEquals(fn.status, 201, JSON.stringify(fn.body));
            // Nothing runs to its end while the jobs are posted, so that the kill comes mid-run however fast the
            // instances are: they fill their slots with held calls and queue the rest.
            effects.pause();
            const created = await roundRobin(
              instances,
              JOBS,
              (p, i) =>
                call(p, "POST", "/v1/functions/jobs", {
                  function_name: "effect",
                  payload: { i },
                  max_attempts: 5,
                }),
            );
            for (const res of created) assertEquals(res.status, 201, JSON.stringify(res.body));
            const ids: string[] = created.map((res) => res.body.data.id);
            assertEquals(new Set(ids).size, JOBS, "each request made its own job");

            effects.resume();
            // The third instance dies with its share of attempts in flight and of jobs waiting for a slot.
            await waitUntil("a quarter of the side effects", () => effects.rows.length >= JOBS / 4, 120_000);
            const killed = instances.pop()!;
            assertEquals((await killed.stop("SIGKILL")).signal, "SIGKILL");
            const beforeKill = effects.rows.length;
            assert(beforeKill < JOBS, "the kill happened while jobs were still to run");

            let jobs: { id: string; status: string; attempts: number }[] = [];
            await waitUntil("every job to end", async () => {
              jobs = await projectSql(sandbox, "select id::text, status, attempts from platform.jobs");
              return jobs.length === JOBS &&
                jobs.every((j) => j.status === "completed" || j.status === "dead");
            }, 120_000);
            assertEquals(jobs.map((j) => j.id).sort(), [...ids].sort(), "none lost");
            assert(jobs.every((j) => j.status === "completed"), "with 5 attempts each, every job completes");
            assertEffectivelyOnce(effects.rows, jobs, JOBS_CONCURRENCY);
            // Its attempts in flight (its slots were full) were taken over once their leases expired: a new attempt.
            assert(
              jobs.some((j) => j.attempts > 1),
              "the attempts the killed instance was running ran again",
            );
            // The survivors took over: every job posted to the killed instance completed, those it had not
            // started included.
            const posted = new Set(ids.filter((_, i) => i % 3 === 2));
            const ranAfterKill = new Set(effects.rows.slice(beforeKill).map((r) => r.job));
            assert(
              [...posted].some((id) => ranAfterKill.has(id)),
              "the survivors ran the killed instance's jobs",
            );
          },
        );
      } finally {
        effects.resume(); // an instance stopping waits for its attempts in flight
        await Promise.all(instances.map((i) => i.stop()));
        for (const place of places.slice(1)) await place.destroy();
        await sandbox.destroy();
        await effects.close();
        await hook.close();
      }
    },
  });

  Deno.test({
    name:
      "an instance without a free slot announces its jobs, and one with free slots pulls them from the table",
    fn: async () => {
      const effects = effectServer(0);
      // No periodic sweep (only the one at start): the work can only move between instances by the pull.
      const sandbox = await makeSandbox({ FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1", JOBS_SWEEP_SECS: "0" });
      const other = await ownDataDir(sandbox);
      const instances: ChildPlatform[] = [];
      const post = (child: ChildPlatform, path: string, body: unknown) =>
        callChild(child, sandbox.secretKey, "POST", path, body);
      try {
        const small = await spawnPlatform({ ...sandbox.env, JOBS_CONCURRENCY: "2" });
        instances.push(small, await spawnPlatform({ ...other.env, JOBS_CONCURRENCY: "8" }));
        const fn = await post(small, "/v1/functions", {
          name: "effect",
          runtime: "deno",
          permissions: { allow_net: [`127.0.0.1:${effects.port}`] },
          code: effects.code,
        });
        assertEquals(fn.status, 201, JSON.stringify(fn.body));
        effects.pause();
        const created = await Promise.all(
          Array.from(
            { length: 10 },
            (_, i) => post(small, "/v1/functions/jobs", { function_name: "effect", payload: { i } }),
          ),
        );
        for (const res of created) assertEquals(res.status, 201, JSON.stringify(res.body));
        // All ten run at once, held at the gate: the instance they were posted to has two slots, so the other
        // pulled eight of them.
        await waitUntil("ten calls in flight at once", () => effects.held === 10, 60_000);
        effects.resume();
        let jobs: { id: string; status: string; attempts: number }[] = [];
        await waitUntil("every job to complete", async () => {
          jobs = await projectSql(sandbox, "select id::text, status, attempts from platform.jobs");
          return jobs.length === 10 && jobs.every((j) => j.status === "completed");
        }, 60_000);
        assertEffectivelyOnce(effects.rows, jobs, 0);
        assert(jobs.every((j) => j.attempts === 1));
      } finally {
        effects.resume(); // an instance stopping waits for its attempts in flight
        await Promise.all(instances.map((i) => i.stop()));
        await other.destroy();
        await sandbox.destroy();
        await effects.close();
      }
    },
  });
}
