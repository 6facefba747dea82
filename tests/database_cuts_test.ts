// PostgreSQL: the platform's sessions cut again and again, 50–300 ms apart, while jobs, webhooks and data API
// requests keep coming. Each cut lands somewhere else: under a transaction, a pipelined batch, a LISTEN, a new
// connection fetching its types (where postgres.js itself drops a promise), a reservation waiting. The platform
// lives through all of them, answers 503 (never 500) while a connection is gone, and afterwards every job
// completes with its side effect and every notification is delivered. No stack or SQL reaches its log.
import postgres from "postgres";
import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals } from "./assert.ts";
import { callChild, type Json, makeSandbox, serverUrl, spawnPlatform } from "./harness.ts";
import { assertEffectivelyOnce, effectServer, faultEnv, waitUntil } from "./jobs_fixtures.ts";
import { webhookReceiver } from "./notification_fakes.ts";

const CUTS = 40;
const CONCURRENCY = 8;
const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

if (serverUrl) {
  Deno.test("PostgreSQL: 40 session cuts in quick succession under load; the platform lives, nothing lost", async () => {
    const effects = effectServer(10);
    const hook = webhookReceiver(SECRET, {}, { "/hook": 200 });
    const sandbox = await makeSandbox(faultEnv(CONCURRENCY));
    const child = await spawnPlatform(sandbox.env);
    const name = decodeURIComponent(new URL(sandbox.env.DATABASE_URL!).pathname.slice(1));
    const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
    const call = (method: string, path: string, body?: unknown) =>
      callChild(child, sandbox.secretKey, method, path, body);
    /** Every row of a listing, page by page. */
    const listAll = async (path: string): Promise<Json[]> => {
      const rows: Json[] = [];
      for (let offset = 0;; offset += 500) {
        const res = await call("GET", `${path}?limit=500&offset=${offset}`);
        assertEquals(res.status, 200, JSON.stringify(res.body));
        rows.push(...res.body.data);
        if (res.body.data.length < 500) return rows;
      }
    };
    const statuses = new Map<number, number>();
    const odd: unknown[] = [];
    const jobIds: string[] = [];
    const sendIds: string[] = [];
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
      const table = await call("POST", "/v1/sql", {
        query: "create table public.items (id int primary key); insert into public.items values (1)",
      });
      assertEquals(table.status, 200, JSON.stringify(table.body));

      let cutting = true;
      /** One job, one webhook and one data API read at a time, until the cuts end; each answer counted. */
      const load = (async () => {
        for (let i = 0; cutting; i++) {
          const [job, send, read] = await Promise.all([
            call("POST", "/v1/functions/jobs", { function_name: "effect", payload: { i }, max_attempts: 10 }),
            call("POST", "/v1/notifications/send", {
              channel: "webhook",
              recipient: `${hook.url}/hook`,
              event: "e",
              payload: { i },
            }),
            call("GET", "/rest/v1/items?select=id"),
          ]);
          for (const res of [job, send, read]) {
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (![200, 201, 503].includes(res.status)) odd.push(res.body);
          }
          if (job.status === 201) jobIds.push(job.body.data.id);
          if (send.status === 200) sendIds.push(send.body.data.id);
        }
      })();
      for (let cut = 0; cut < CUTS; cut++) {
        await admin.unsafe(
          `select pg_terminate_backend(pid) from pg_stat_activity
            where (datname = $1 or datname like $2) and pid <> pg_backend_pid()`,
          [name, `${name}\\_%`],
        );
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 250));
      }
      cutting = false;
      await load;

      const unexpected = [...statuses.keys()].filter((s) => ![200, 201, 503].includes(s));
      assertEquals(
        unexpected,
        [],
        `only successes and 503s while sessions were cut: ${JSON.stringify([...statuses, odd])}`,
      );
      assert(jobIds.length > 0 && sendIds.length > 0, "work was accepted between the cuts");

      // A 503 may come after its commit (the answer lost with the session): such a job or notification exists
      // too, and ends like the others.
      let jobs: Json[] = [];
      await waitUntil("every job to end", async () => {
        jobs = await listAll("/v1/functions/jobs");
        return jobs.length >= jobIds.length &&
          jobs.every((j) => j.status === "completed" || j.status === "dead");
      }, 120_000);
      const listed = new Set(jobs.map((j) => j.id));
      assertEquals(jobIds.filter((id) => !listed.has(id)), [], "no job lost");
      assert(jobs.every((j) => j.status === "completed"), "every job completes");
      assertEffectivelyOnce(effects.rows, jobs as { id: string; attempts: number }[], CUTS * CONCURRENCY);

      let list: Json[] = [];
      await waitUntil("every notification delivered", async () => {
        list = await listAll("/v1/notifications");
        return list.length >= sendIds.length && list.every((n) => n.status === "delivered");
      }, 120_000);
      const sent = new Set(list.map((n) => n.id));
      assertEquals(sendIds.filter((id) => !sent.has(id)), [], "no notification lost");
      assertEquals(new Set(hook.arrived.map((a) => a.id)), sent, "every notification arrived");
      // Nothing of the code reached the log: no stack frame, no SQL, however the sessions ended.
      assertEquals(child.output.filter((line) => /^\s+at |\bselect\b|\bupdate\b/i.test(line)), []);
    } finally {
      await admin.end();
      await child.stop();
      await effects.close();
      await hook.close();
      await sandbox.destroy();
    }
  });
}
