import { assert, assertEquals } from "./assert.ts";
import { type ChildPlatform, type Json, json, makeSandbox, spawnPlatform } from "./harness.ts";
import { waitUntil } from "./jobs_fixtures.ts";

/**
 * The side-effect table. The function cannot write to the platform's own database over HTTP here: the data
 * API is served by the child platform, whose port changes at the restart (PORT=0), and the runtime hides the
 * platform's own ports from functions. So the function writes to this table through a local test server that
 * it is allowed to reach (FUNCTIONS_ALLOW_PRIVATE_NET=127.0.0.1 + allow_net): one row per call, with the job
 * id and attempt from the job headers. Each call is held `holdMs`, so that the kill finds attempts in flight.
 */
function effectServer(holdMs: number) {
  const rows: { job: string; attempt: number }[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const row = await req.json() as { job: string; attempt: number };
    rows.push(row);
    await new Promise((r) => setTimeout(r, holdMs));
    return new Response("written");
  });
  return { rows, port: server.addr.port, close: () => server.shutdown() };
}

/** How a crash case runs: how many jobs, how they are posted, and when the platform is killed. */
interface CrashCase {
  jobs: number;
  concurrency: number;
  holdMs: number;
  /** Post every job at once (they share batched inserts, claims and finishes), else one after the other. */
  burst: boolean;
  /** Side effects seen before the kill. */
  killAfter: number;
}

/** Posts the jobs, kills the platform with SIGKILL mid-way, restarts it and checks every job ran effectively once. */
async function crashAndRecover(o: CrashCase): Promise<void> {
  const effects = effectServer(o.holdMs);
  const sandbox = await makeSandbox({
    FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1",
    JOBS_LEASE_SECS: "2",
    JOBS_SWEEP_SECS: "1",
    JOBS_CONCURRENCY: String(o.concurrency),
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
    const create = (i: number) =>
      post(child!, "/v1/functions/jobs", { function_name: "effect", payload: { i }, max_attempts: 5 });
    const created = [];
    if (o.burst) created.push(...await Promise.all(Array.from({ length: o.jobs }, (_, i) => create(i))));
    else for (let i = 0; i < o.jobs; i++) created.push(await create(i));
    for (const res of created) assertEquals(res.status, 201, JSON.stringify(res.body));
    const ids: string[] = created.map((res) => res.body.data.id);
    assertEquals(new Set(ids).size, o.jobs, "each request made its own job");
    await waitUntil("some side effects", () => effects.rows.length >= o.killAfter);
    const beforeKill = effects.rows.length;
    const status = await child.stop("SIGKILL");
    assertEquals(status.signal, "SIGKILL");
    child = null;
    assert(beforeKill < o.jobs, "the kill happened while jobs were still to run");

    child = await spawnPlatform(sandbox.env);
    const c = child;
    let jobs: Json[] = [];
    await waitUntil("every job to end", async () => {
      const res = await json(await fetch(`${c.url}/v1/functions/jobs?limit=500`, { headers }));
      jobs = res.body.data;
      return jobs.length === o.jobs && jobs.every((j) => j.status === "completed" || j.status === "dead");
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
    assert(
      reruns <= o.concurrency,
      `${reruns} jobs ran again: at most JOBS_CONCURRENCY (${o.concurrency}) attempts were in flight`,
    );
    for (const j of jobs) {
      assertEquals(j.attempts, Math.max(...effects.rows.filter((r) => r.job === j.id).map((r) => r.attempt)));
    }
  } finally {
    await child?.stop();
    await effects.close();
    await sandbox.destroy();
  }
}

Deno.test("kill -9 while jobs run, restart: every job ends completed, none lost, none completed twice", () =>
  crashAndRecover({ jobs: 40, concurrency: 8, holdMs: 300, burst: false, killAfter: 10 }));

Deno.test("a burst of jobs (batched inserts, claims and finishes), kill -9, restart: none lost, none twice", () =>
  crashAndRecover({ jobs: 400, concurrency: 64, holdMs: 50, burst: true, killAfter: 100 }));
