import { assert, assertEquals } from "./assert.ts";
import { type ChildPlatform, type Json, json, makeSandbox, spawnPlatform } from "./harness.ts";
import { waitUntil } from "./jobs_fixtures.ts";

const JOBS = 400;
const CONCURRENCY = 64;

/**
 * The side-effect table. The function cannot write to the platform's own database over HTTP here: the data
 * API is served by the child platform, whose port changes at the restart (PORT=0), and the runtime hides the
 * platform's own ports from functions. So the function writes to this table through a local test server that
 * it is allowed to reach (FUNCTIONS_ALLOW_PRIVATE_NET=127.0.0.1 + allow_net): one row per call, with the job
 * id and attempt from the job headers.
 */
function effectServer() {
  const rows: { job: string; attempt: number }[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const row = await req.json() as { job: string; attempt: number };
    rows.push(row);
    await new Promise((r) => setTimeout(r, 50)); // keep attempts in flight for the kill to find some
    return new Response("written");
  });
  return { rows, port: server.addr.port, close: () => server.shutdown() };
}

Deno.test("a burst of jobs (batched inserts, claims and finishes), kill -9, restart: none lost, none twice", async () => {
  const effects = effectServer();
  const sandbox = await makeSandbox({
    FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1",
    JOBS_LEASE_SECS: "2",
    JOBS_SWEEP_SECS: "1",
    JOBS_CONCURRENCY: String(CONCURRENCY),
  });
  const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
  const post = async (child: ChildPlatform, path: string, body: unknown) =>
    await json(await fetch(`${child.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) }));
  let child: ChildPlatform | null = await spawnPlatform(sandbox.env);
  try {
    const fn = await post(child, "/v1/functions", {
      name: "effect",
      runtime: "deno",
      permissions: { allow_net: [`127.0.0.1:${effects.port}`] },
      code: `export default { async fetch(req) {
        const res = await fetch("http://127.0.0.1:${effects.port}/effects", {
          method: "POST",
          body: JSON.stringify({
            job: req.headers.get("x-platform-job-id"),
            attempt: Number(req.headers.get("x-platform-job-attempt")),
          }),
        });
        return new Response(await res.text(), { status: res.ok ? 200 : 500 });
      } };`,
    });
    assertEquals(fn.status, 201, JSON.stringify(fn.body));
    // All at once: the requests share insert statements, and their attempts share claims and finishes.
    const created = await Promise.all(
      Array.from(
        { length: JOBS },
        (_, i) =>
          post(child!, "/v1/functions/jobs", { function_name: "effect", payload: { i }, max_attempts: 5 }),
      ),
    );
    for (const res of created) assertEquals(res.status, 201, JSON.stringify(res.body));
    const ids: string[] = created.map((res) => res.body.data.id);
    assertEquals(new Set(ids).size, JOBS, "each request made its own job");
    await waitUntil("some side effects", () => effects.rows.length >= 100);
    const beforeKill = effects.rows.length;
    const status = await child.stop("SIGKILL");
    assertEquals(status.signal, "SIGKILL");
    child = null;
    assert(beforeKill < JOBS, "the kill happened while jobs were still to run");

    child = await spawnPlatform(sandbox.env);
    const c = child;
    let jobs: Json[] = [];
    await waitUntil("every job to end", async () => {
      const res = await json(await fetch(`${c.url}/v1/functions/jobs?limit=500`, { headers }));
      jobs = res.body.data;
      return jobs.length === JOBS && jobs.every((j) => j.status === "completed" || j.status === "dead");
    }, 60_000);
    assertEquals(jobs.map((j) => j.id).sort(), [...ids].sort(), "none lost");
    assert(jobs.every((j) => j.status === "completed"), "with 5 attempts each, every job completes");

    // Effectively once: no attempt of a job ran twice, and a job ran again only because the kill interrupted
    // its attempt after the side effect and before the completion was recorded.
    const attempts = effects.rows.map((r) => `${r.job}#${r.attempt}`);
    assertEquals(new Set(attempts).size, attempts.length, "no (job, attempt) ran twice");
    const perJob = new Map<string, number>();
    for (const r of effects.rows) perJob.set(r.job, (perJob.get(r.job) ?? 0) + 1);
    assertEquals([...perJob.keys()].sort(), [...ids].sort(), "every job wrote its side effect");
    const reruns = [...perJob.values()].filter((n) => n > 1).length;
    assert(reruns <= CONCURRENCY, `${reruns} jobs ran again: at most ${CONCURRENCY} attempts were in flight`);
    for (const j of jobs) {
      assertEquals(j.attempts, Math.max(...effects.rows.filter((r) => r.job === j.id).map((r) => r.attempt)));
    }
  } finally {
    await child?.stop();
    await effects.close();
    await sandbox.destroy();
  }
});
