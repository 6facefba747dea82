/**
 * Jobs benchmark: no-op jobs through the whole path (POST /v1/functions/jobs → project database → KV queue
 * (+ local fast path) → claim → invoke of a deno function → completion recorded), plus an every-second cron
 * entry during the run. The offered rate rises step by step (bench/_ramp.ts) until the platform saturates;
 * prints each step (offered, finished, p50/p95 enqueue→start, start→done, CPU per job), the ceiling, cron tick
 * jitter, and the ratio against a bare baseline measured in the same run: direct invokes of the same function
 * through the invoke path at the same concurrency.
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/jobs.ts
 *   BENCH_STEP_SECS=5 BENCH_RATE_START=250 BENCH_RATE_FACTOR=1.5 BENCH_RATE_MAX=20000 DATABASE_URL=… (optional)
 */
import { createHandler } from "../routes/mod.ts";
import { loadConfig } from "../services/config.ts";
import { closePlatform, openPlatform } from "../services/platform.ts";
import { makeSandbox } from "../tests/harness.ts";
import { startWorkers } from "../workers/mod.ts";
import { ceiling, ramp } from "./_ramp.ts";

const STEP_SECS = Number(Deno.env.get("BENCH_STEP_SECS") ?? 5);
const START = Number(Deno.env.get("BENCH_RATE_START") ?? 250);
const FACTOR = Number(Deno.env.get("BENCH_RATE_FACTOR") ?? 1.5);
const MAX = Number(Deno.env.get("BENCH_RATE_MAX") ?? 20_000);
const BOUND_MS = 20;
const NOOP = `export default { fetch() { return new Response("ok"); } };`;

const sandbox = await makeSandbox({ LOG_LEVEL: "error" });
// Attempts in flight: a claim waits its statement (tens of ms on PGlite under load) inside its slot.
const config = loadConfig({
  ...sandbox.env,
  INVOKE_RATE_PER_MIN: "100000000",
  JOBS_CONCURRENCY: Deno.env.get("JOBS_CONCURRENCY") ?? "256",
});
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
  const bare = await baseline(5, config.JOBS_CONCURRENCY);

  await (await call("/v1/functions/cron", "POST", {
    name: "bench-tick",
    schedule: "* * * * * *",
    function_name: "cron-noop",
  })).arrayBuffer();

  // The ramp: offered jobs per second rise step by step until the platform saturates.
  const db = await platform.dbs.project(ref);
  const started = new Date();
  console.log(
    `jobs bench (${platform.dbs.kind}, steps of ${STEP_SECS}s from ${START}/s ×${FACTOR}, concurrency ${config.JOBS_CONCURRENCY})`,
  );
  const steps = await ramp({
    offer: async (i) => {
      const res = await call("/v1/functions/jobs", "POST", { function_name: "noop", payload: { i } });
      await res.arrayBuffer();
      return res.status === 201;
    },
    finished: async () =>
      Number(
        (await db.query<{ n: string }>(
          "select count(*) as n from platform.jobs where function_name = 'noop' and status = 'completed'",
        ))[0]?.n,
      ),
    latency: async (from, to) => {
      const [row] = await db.query<{ p50: number; p95: number; run: number }>(
        `select percentile_cont(0.5) within group (order by wait) as p50,
                percentile_cont(0.95) within group (order by wait) as p95,
                percentile_cont(0.5) within group (order by run) as run
           from (select extract(epoch from (started_at - created_at)) * 1000 as wait,
                        extract(epoch from (completed_at - started_at)) * 1000 as run
                   from platform.jobs
                  where function_name = 'noop' and started_at is not null
                    and created_at >= $1 and created_at < $2) s`,
        [from.toISOString(), to.toISOString()],
      );
      return {
        p50: Number(row?.p50),
        p95: Number(row?.p95),
        stages: `start→done p50 ${Number(row?.run).toFixed(1)} ms`,
      };
    },
  }, { start: START, factor: FACTOR, max: MAX, stepSecs: STEP_SECS, boundMs: BOUND_MS, drainSecs: 30 });
  await (await call("/v1/functions/cron/bench-tick", "DELETE")).arrayBuffer();
  const [jitter] = await db.query<{ p50: number; p99: number; n: string }>(
    `select percentile_cont(0.5) within group (order by ms) as p50,
            percentile_cont(0.99) within group (order by ms) as p99, count(*) as n
       from (select extract(epoch from (created_at - cron_tick)) * 1000 as ms
               from platform.jobs where cron_id is not null and created_at >= $1) s`,
    [started.toISOString()],
  );
  const [twice] = await db.query<{ n: string }>(
    "select count(*) as n from platform.jobs where function_name = 'noop' and attempts > 1",
  );
  const { ceiling: best, capacity, p50AtCeiling } = ceiling(steps);
  console.log(`  bare invoke baseline       ${bare.toFixed(0)} invokes/s of the same no-op function`);
  console.log(
    `  ceiling                    ${best.toFixed(0)} jobs/s (p50 enqueue→start ${
      p50AtCeiling.toFixed(1)
    } ms); ` +
      `capacity when saturated ${capacity.toFixed(0)} jobs/s`,
  );
  console.log(
    `  cron tick jitter           p50 ${Number(jitter?.p50).toFixed(1)} ms, p99 ${
      Number(jitter?.p99).toFixed(1)
    } ms over ${jitter?.n} ticks`,
  );
  console.log(`  jobs run more than once    ${twice?.n}`);
  console.log(`  ratio ceiling/bare invoke  ${(best / bare).toFixed(3)}`);
  const met = best >= 3000;
  console.log(
    `  target                     ≥ 3,000 jobs/s with p50 enqueue→start ≤ ${BOUND_MS} ms, cron jitter p99 ≤ 1 s: ${
      met ? "MET" : "MISSED"
    }`,
  );
} finally {
  await workers.stop();
  await closePlatform(platform);
  await sandbox.destroy();
}
