/**
 * Alerts benchmark: 1,000 enabled alerts over 100 functions (10 each, every metric, windows of 5 min, 15 min and
 * 1 h) with a day of per-minute rollups per function (144,000 rollups). Prints the time of one evaluation tick
 * of the project and per alert, then the invoke throughput of a no-op function with the evaluator ticking (every
 * BENCH_EVAL_SECS, default 30, the default ALERTS_EVAL_SECS) over 1,000 enabled alerts against the same with none
 * enabled, measured in the same run in phases none, alerts, alerts, none, so that a steady drift on a shared
 * machine hits both sides.
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/alerts.ts
 *   BENCH_SECONDS=30 (per invoke phase) BENCH_EVAL_SECS=30 BENCH_TICKS=20 BENCH_CONCURRENCY=16
 *   DATABASE_URL=… (optional)
 */
import { createHandler } from "../routes/mod.ts";
import { METRICS } from "../services/alerts/metrics.ts";
import { loadConfig } from "../services/config.ts";
import { closePlatform, openPlatform } from "../services/platform.ts";
import { makeSandbox } from "../tests/harness.ts";
import { startAlertEvaluator } from "../workers/alert_evaluator.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 30);
const EVAL_SECS = Deno.env.get("BENCH_EVAL_SECS") ?? "30";
const TICKS = Number(Deno.env.get("BENCH_TICKS") ?? 20);
const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? 16);
const FUNCTIONS = 100;
const ALERTS = 1000;
const WINDOWS = [300, 300, 900, 3600];
const NOOP = `export default { fetch() { return new Response("ok"); } };`;
// One minute of 100 calls: slots of 1–3 ms (the same histogram in every rollup).
const HIST = `{${[...Array(120).fill(0), 10, 30, 30, 20, 10].join(",")}}`;

const sandbox = await makeSandbox({ LOG_LEVEL: "error" });
const config = loadConfig({
  ...sandbox.env,
  INVOKE_RATE_PER_MIN: "100000000",
  PLAN_INVOCATIONS_PER_MONTH: "1000000000",
  ALERTS_EVAL_SECS: EVAL_SECS,
});
const platform = await openPlatform(config);
const handler = createHandler(platform);
const ref = config.DEFAULT_PROJECT_REF;
const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
const call = (path: string, method: string, body?: unknown) =>
  Promise.resolve(
    handler(new Request(`http://127.0.0.1${path}`, { method, headers, body: JSON.stringify(body) })),
  );

const invokePhases = (secs: number) => `invoke phases of ${secs} s at concurrency ${CONCURRENCY}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.ceil(q * xs.length) - 1]!;

/** Invokes of the no-op function through the whole HTTP path for `seconds` at CONCURRENCY; per second. */
async function invokes(seconds: number): Promise<number> {
  let done = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const res = await call("/v1/functions/noop/invoke", "POST", {});
      await res.arrayBuffer();
      if (res.status === 200) done++;
    }
  }));
  return done / seconds;
}

try {
  await (await call("/v1/functions", "POST", { name: "noop", runtime: "deno", code: NOOP })).arrayBuffer();
  const db = await platform.dbs.project(ref);
  // The 100 watched functions are copies of the no-op's row (they are never called), and a day of rollups each.
  await db.query(
    `insert into platform.functions (name, runtime, code, code_hash, env_vars, permissions, is_active)
     select 'fn' || lpad(i::text, 3, '0'), runtime, code, code_hash, env_vars, permissions, is_active
     from platform.functions, generate_series(1, $1) i where name = 'noop'`,
    [FUNCTIONS],
  );
  await db.query(
    `insert into platform.function_invocation_rollups (function_id, function_name, bucket, count, errors,
       timeouts, oom, status_1xx, status_2xx, status_3xx, status_4xx, status_5xx, sum_ms, min_ms, max_ms, hist)
     select f.id, f.name, date_trunc('minute', now()) - make_interval(mins => m), 100, 4, 1, 0, 0, 96, 0, 0, 4,
       200, 1, 3, $1::int[]
     from platform.functions f, generate_series(0, 1439) m where f.name like 'fn%'`,
    [HIST],
  );
  // 10 alerts per function, every metric in turn; thresholds no value reaches, so nothing fires.
  await db.query(
    `insert into platform.alerts (name, metric, condition, threshold, channel, destination, function_name,
       window_secs, cooldown_secs)
     select 'alert-' || i, ($1::text[])[1 + i % array_length($1::text[], 1)], 'gt',
       case when ($1::text[])[1 + i % array_length($1::text[], 1)] = 'error_rate' then 1 else 1e12 end,
       'webhook', 'https://hooks.example.com/alerts', 'fn' || lpad((1 + i % $2)::text, 3, '0'),
       ($3::int[])[1 + (i / $2) % array_length($3::int[], 1)], 0
     from generate_series(0, $4 - 1) i`,
    [METRICS, FUNCTIONS, WINDOWS, ALERTS],
  );

  // Evaluation ticks, driven one after another (the first warms the caches; it is reported apart).
  const first = performance.now();
  const warm = await platform.alerts.evaluate(ref, 1);
  const firstMs = performance.now() - first;
  if (warm.evaluated !== ALERTS) throw new Error(`evaluated ${warm.evaluated} alerts, expected ${ALERTS}`);
  const tickMs: number[] = [];
  for (let t = 2; t < 2 + TICKS; t++) {
    const started = performance.now();
    const r = await platform.alerts.evaluate(ref, t);
    tickMs.push(performance.now() - started);
    if (r.evaluated !== ALERTS || r.triggered !== 0) throw new Error(`tick ${t}: ${JSON.stringify(r)}`);
  }

  // Invoke throughput with the evaluator ticking every second: none enabled vs 1,000, alternating.
  const evaluator = startAlertEvaluator(platform);
  const enable = (on: boolean) => db.query("update platform.alerts set enabled = $1", [on]);
  const none: number[] = [];
  const some: number[] = [];
  try {
    await invokes(2); // warm-up
    for (const on of [false, true, true, false]) {
      await enable(on);
      (on ? some : none).push(await invokes(SECONDS));
    }
  } finally {
    await evaluator.stop();
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const p50 = median(tickMs);
  console.log(
    `alerts bench (${platform.dbs.kind}, ${ALERTS} alerts over ${FUNCTIONS} functions, a day of rollups)`,
  );
  console.log(`  first tick                 ${firstMs.toFixed(1)} ms`);
  console.log(
    `  tick (${TICKS} ticks)            p50 ${p50.toFixed(1)} ms, p95 ${
      quantile(tickMs, 0.95).toFixed(1)
    } ms`,
  );
  console.log(`  per alert per tick         p50 ${(p50 / ALERTS).toFixed(3)} ms`);
  console.log(`  evaluator period           ${EVAL_SECS} s, ${invokePhases(SECONDS)}`);
  console.log(
    `  invokes/s, none enabled    ${none.map((x) => x.toFixed(0)).join(", ")} (mean ${avg(none).toFixed(0)})`,
  );
  console.log(
    `  invokes/s, 1,000 enabled   ${some.map((x) => x.toFixed(0)).join(", ")} (mean ${avg(some).toFixed(0)})`,
  );
  console.log(`  ratio 1,000 alerts/none    ${(avg(some) / avg(none)).toFixed(3)}`);
  console.log(`  target                     ≤ 1 ms per alert per tick; ratio ≥ 0.95`);
} finally {
  await closePlatform(platform);
  await sandbox.destroy();
}
