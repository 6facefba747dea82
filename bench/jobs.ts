/**
 * Jobs benchmark: no-op jobs sustained through the whole path (POST /v1/functions/jobs → project database →
 * KV queue (+ local fast path) → claim → invoke of a deno function → completion recorded), plus an every-second
 * cron entry during the run. Prints completed jobs/s, p50/p95 enqueue-to-start (created_at → started_at),
 * cron tick jitter p50/p99 (tick → job created), and the ratio against a bare baseline measured in the same
 * run: direct invokes of the same function through the invoke path at the same concurrency.
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/jobs.ts
 *   BENCH_SECONDS=30 BENCH_RATE=600 (offered jobs per second) DATABASE_URL=… (optional)
 */
import { createHandler } from "../routes/mod.ts";
import { loadConfig } from "../services/config.ts";
import { closePlatform, openPlatform } from "../services/platform.ts";
import { makeSandbox } from "../tests/harness.ts";
import { startWorkers } from "../workers/mod.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 30);
const RATE = Number(Deno.env.get("BENCH_RATE") ?? 600);
const TICK_MS = 50;
const NOOP = `export default { fetch() { return new Response("ok"); } };`;

const sandbox = await makeSandbox({ LOG_LEVEL: "error" });
const config = loadConfig({ ...sandbox.env, INVOKE_RATE_PER_MIN: "100000000" });
const platform = await openPlatform(config);
const handler = createHandler(platform);
const workers = startWorkers(platform, { sweepEveryMs: 0 });
const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
const call = (path: string, method: string, body?: unknown) =>
  Promise.resolve(
    handler(new Request(`http://127.0.0.1${path}`, { method, headers, body: JSON.stringify(body) })),
  );
const ref = config.DEFAULT_PROJECT_REF;

/** Direct invokes of the no-op function at `concurrency`, through the same invoke path jobs use. */
async function baseline(seconds: number, concurrency: number): Promise<number> {
  let done = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      await platform.functions.invoker.invoke("noop", { method: "POST", body: {} }, {
        ref,
        requestId: crypto.randomUUID(),
        clientId: "bench",
      });
      done++;
    }
  }));
  return done / seconds;
}

try {
  for (const name of ["noop", "cron-noop"]) {
    await (await call("/v1/functions", "POST", { name, runtime: "deno", code: NOOP })).arrayBuffer();
  }
  const bare = await baseline(Math.min(5, SECONDS), config.JOBS_CONCURRENCY);

  await (await call("/v1/functions/cron", "POST", {
    name: "bench-tick",
    schedule: "* * * * * *",
    function_name: "cron-noop",
  })).arrayBuffer();

  // Offered load: RATE jobs per second, open loop, for SECONDS.
  let offered = 0;
  let refused = 0;
  const creates: Promise<void>[] = [];
  const started = performance.now();
  const perTick = Math.max(1, Math.round(RATE * TICK_MS / 1000));
  while (performance.now() - started < SECONDS * 1000) {
    const tick = performance.now();
    for (let i = 0; i < perTick; i++) {
      offered++;
      creates.push(
        call("/v1/functions/jobs", "POST", { function_name: "noop", payload: { i: offered } }).then(
          async (res) => {
            if (res.status !== 201) refused++;
            await res.arrayBuffer();
          },
        ),
      );
    }
    const wait = TICK_MS - (performance.now() - tick);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(creates);
  const windowSecs = (performance.now() - started) / 1000;
  await (await call("/v1/functions/cron/bench-tick", "DELETE")).arrayBuffer();
  const db = await platform.dbs.project(ref);
  const count = async (where: string) =>
    Number((await db.query<{ n: string }>(`select count(*) as n from platform.jobs where ${where}`))[0]?.n);
  const completedInWindow = await count("function_name = 'noop' and status = 'completed'");
  // Drain what is left (bounded), so the latency figures cover every job.
  const drainEnd = performance.now() + 60_000;
  while (performance.now() < drainEnd && await count("status in ('pending', 'running', 'failed')") > 0) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const drainedSecs = (performance.now() - started) / 1000;
  const [lat] = await db.query<{ p50: number; p95: number; n: string }>(
    `select percentile_cont(0.5) within group (order by ms) as p50,
            percentile_cont(0.95) within group (order by ms) as p95, count(*) as n
       from (select extract(epoch from (started_at - created_at)) * 1000 as ms
               from platform.jobs where function_name = 'noop' and started_at is not null) s`,
  );
  const [jitter] = await db.query<{ p50: number; p99: number; n: string }>(
    `select percentile_cont(0.5) within group (order by ms) as p50,
            percentile_cont(0.99) within group (order by ms) as p99, count(*) as n
       from (select extract(epoch from (created_at - cron_tick)) * 1000 as ms
               from platform.jobs where cron_id is not null) s`,
  );
  const completed = await count("function_name = 'noop' and status = 'completed'");
  const perSec = completedInWindow / windowSecs;
  console.log(
    `jobs bench (${platform.dbs.kind}, ${SECONDS}s, offered ${RATE}/s, concurrency ${config.JOBS_CONCURRENCY})`,
  );
  console.log(`  bare invoke baseline       ${bare.toFixed(0)} invokes/s of the same no-op function`);
  console.log(`  offered                    ${offered} (${refused} refused)`);
  console.log(`  completed in the window    ${completedInWindow} → ${perSec.toFixed(0)} jobs/s`);
  console.log(
    `  completed after draining   ${completed} in ${drainedSecs.toFixed(1)} s → ${
      (completed / drainedSecs).toFixed(0)
    } jobs/s`,
  );
  console.log(
    `  enqueue → start            p50 ${Number(lat?.p50).toFixed(1)} ms, p95 ${
      Number(lat?.p95).toFixed(1)
    } ms`,
  );
  console.log(
    `  cron tick jitter           p50 ${Number(jitter?.p50).toFixed(1)} ms, p99 ${
      Number(jitter?.p99).toFixed(1)
    } ms over ${jitter?.n} ticks`,
  );
  console.log(`  ratio jobs/bare invoke     ${(perSec / bare).toFixed(3)}`);
  console.log(`  target                     ≥ 500 jobs/s, p50 enqueue→start ≤ 50 ms, cron jitter p99 ≤ 1 s`);
} finally {
  await workers.stop();
  await closePlatform(platform);
  await sandbox.destroy();
}
