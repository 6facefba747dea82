// The project's database restarted twice while jobs and webhooks run, the platform left running: on PostgreSQL
// every connection of the sandbox's databases is cut (pg_terminate_backend, what a server restart does to its
// clients); on PGlite the project's engine is replaced (a statement that overflows its stack ends its thread,
// and the directory is opened again). The platform reconnects on its own, and every job and every notification
// ends in its final state once: none lost, no side effect doubled beyond the attempts in flight.
import postgres from "postgres";
import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  callChild,
  type ChildPlatform,
  type Json,
  makeSandbox,
  type Sandbox,
  serverUrl,
  spawnPlatform,
  within,
} from "./harness.ts";
import { assertEffectivelyOnce, effectServer, faultEnv, waitUntil } from "./jobs_fixtures.ts";
import { webhookReceiver } from "./notification_fakes.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;
const JOBS = 60;
const SENDS = 40;
const CONCURRENCY = 8;

/** Restarts the sandbox's database under the running platform (see the top of the file). */
async function restartDatabase(sandbox: Sandbox, child: ChildPlatform): Promise<void> {
  if (serverUrl) {
    const name = decodeURIComponent(new URL(sandbox.env.DATABASE_URL!).pathname.slice(1));
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    try {
      // The pids first, then the cut: no other database's session is ever a candidate. The platform's LISTEN
      // connection is always there once it has connected again after the previous cut.
      let pids: number[] = [];
      await waitUntil("the platform's connections", async () => {
        pids = (await admin.unsafe<{ pid: number }[]>(
          "select pid from pg_stat_activity where (datname = $1 or datname like $2) and pid <> pg_backend_pid()",
          [name, `${name}\\_%`],
        )).map((r) => r.pid);
        return pids.length > 0;
      }, 30_000);
      await admin.unsafe("select pg_terminate_backend(p) from unnest($1::int[]) p", [pids]);
    } finally {
      await admin.end();
    }
    return;
  }
  const nested = "[".repeat(100_000) + "]".repeat(100_000);
  const res = await callChild(child, sandbox.secretKey, "POST", "/v1/sql", {
    query: `select '${nested}'::jsonb is not null as ok`,
  });
  assertEquals([res.status, res.body.error?.code], [400, "54001"], "the engine overflowed and was replaced");
}

Deno.test("the database restarted twice under running jobs and webhooks: each ends once, none lost", async () => {
  const effects = effectServer(200);
  const hook = webhookReceiver(SECRET, {}, { "/hook": 200 });
  const sandbox = await makeSandbox(faultEnv(CONCURRENCY));
  const child = await spawnPlatform(sandbox.env);
  const call = (method: string, path: string, body?: unknown) =>
    callChild(child, sandbox.secretKey, method, path, body);
  try {
    const fn = await call("POST", "/v1/functions", {
      name: "effect",
      runtime: "deno",
      permissions: { allow_net: [`127.0.0.1:${effects.port}`] },
      code: effects.code,
    });
    assertEquals(fn.status, 201, JSON.stringify(fn.body));
    assertEquals(
      (await call("PATCH", "/v1/notifications/settings", { webhook: { secret: SECRET } })).status,
      200,
    );

    effects.pause();
    const jobIds: string[] = [];
    const sendIds: string[] = [];
    for (let i = 0; i < Math.max(JOBS, SENDS); i++) {
      if (i < JOBS) {
        const res = await call("POST", "/v1/functions/jobs", {
          function_name: "effect",
          payload: { i },
          max_attempts: 5,
        });
        assertEquals(res.status, 201, JSON.stringify(res.body));
        jobIds.push(res.body.data.id);
      }
      if (i < SENDS) {
        const res = await call("POST", "/v1/notifications/send", {
          channel: "webhook",
          recipient: `${hook.url}/hook`,
          event: "e",
          payload: { i },
        });
        assertEquals(res.status, 200, JSON.stringify(res.body));
        sendIds.push(res.body.data.id);
      }
    }

    // Each restart comes while attempts are held in flight at the effect server's gate, however fast or slow
    // the machine: the first before any side effect, the second once some have happened and most are to come.
    await waitUntil("attempts in flight", () => effects.held > 0, 60_000);
    await restartDatabase(sandbox, child);
    effects.resume();
    await waitUntil("some side effects", () => effects.rows.length >= 10, 60_000);
    effects.pause();
    await waitUntil("attempts in flight again", () => effects.held > 0, 60_000);
    await restartDatabase(sandbox, child);
    assert(effects.rows.length < JOBS, "the second restart happened while jobs were still to run");
    effects.resume();

    let jobs: Json[] = [];
    await waitUntil("every job to end", async () => {
      const res = await call("GET", "/v1/functions/jobs?limit=500");
      jobs = res.status === 200 ? res.body.data : [];
      return jobs.length === JOBS && jobs.every((j) => j.status === "completed" || j.status === "dead");
    }, 90_000);
    assertEquals(jobs.map((j) => j.id).sort(), [...jobIds].sort(), "no job lost");
    assert(jobs.every((j) => j.status === "completed"), "with 5 attempts each, every job completes");
    assertEffectivelyOnce(effects.rows, jobs as { id: string; attempts: number }[], 2 * CONCURRENCY);

    let list: Json[] = [];
    await waitUntil("every notification delivered", async () => {
      const res = await call("GET", "/v1/notifications?limit=500");
      list = res.status === 200 ? res.body.data : [];
      return list.length === SENDS && list.every((n) => n.status === "delivered");
    }, 90_000);
    // The receiver deduplicates by webhook-id: each notification arrived under its own id, with its payload.
    const byId = new Map<string, unknown[]>();
    for (const a of hook.arrived) byId.set(a.id, [...(byId.get(a.id) ?? []), a.data]);
    assertEquals(
      [...byId.keys()].sort(),
      [...sendIds].sort(),
      "every notification arrived, under its own id",
    );
    for (const [id, copies] of byId) {
      assert(copies.every((d) => JSON.stringify(d) === JSON.stringify(copies[0])), id);
      assertEquals(copies[0], { i: sendIds.indexOf(id) });
    }
  } finally {
    effects.resume(); // a failure while paused: the platform's stop and the server's close wait for held calls
    await child.stop();
    await within(effects.close(), 60_000, "the effect server's close");
    await hook.close();
    await sandbox.destroy();
  }
});
