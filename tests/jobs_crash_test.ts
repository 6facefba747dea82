import { assert, assertEquals } from "./assert.ts";
import { callChild, type ChildPlatform, type Json, makeSandbox, spawnPlatform } from "./harness.ts";
import { assertEffectivelyOnce, effectServer, waitUntil } from "./jobs_fixtures.ts";

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
  const post = (child: ChildPlatform, path: string, body: unknown) =>
    callChild(child, sandbox.secretKey, "POST", path, body);
  let child: ChildPlatform | null = await spawnPlatform(sandbox.env);
  try {
    const fn = await post(child, "/v1/functions", {
      name: "effect",
      runtime: "deno",
      permissions: { allow_net: [`127.0.0.1:${effects.port}`] },
      code: effects.code,
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
      const res = await callChild(c, sandbox.secretKey, "GET", "/v1/functions/jobs?limit=500");
      jobs = res.body.data;
      return jobs.length === o.jobs && jobs.every((j) => j.status === "completed" || j.status === "dead");
    }, 60_000);
    assertEquals(jobs.map((j) => j.id).sort(), [...ids].sort(), "none lost");
    assert(jobs.every((j) => j.status === "completed"), "with 5 attempts each, every job completes");

    assertEffectivelyOnce(effects.rows, jobs, o.concurrency);
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
