/**
 * Notifications benchmark: webhook notifications to a local receiver through the whole path
 * (POST /v1/notifications/send → project database → KV queue (+ local fast path) → claim → signed HTTP POST →
 * attempt recorded). The offered rate rises step by step (bench/_ramp.ts) until the platform saturates; prints
 * each step (offered, delivered, p50/p95 queued→sent, where the time goes, CPU per notification), the ceiling,
 * and the ratio against a bare baseline measured in the same run (plain fetch POSTs to the same receiver at the
 * same concurrency).
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/notifications.ts
 *   BENCH_STEP_SECS=5 BENCH_RATE_START=250 BENCH_RATE_FACTOR=1.5 BENCH_RATE_MAX=20000 DATABASE_URL=… (optional)
 *
 * With `BENCH_COST=<n>` it measures the cost per notification instead of ramping, which a loaded machine does
 * not change: after a warm-up, `n` notifications offered at `BENCH_COST_RATE` per second (default 1000), and
 * the CPU time the platform process used for them (from /proc, by thread), the CPU of the PostgreSQL backends
 * serving it, its database round trips and its KV enqueues, each per notification. Run it under
 * `deno run --cpu-prof` for the profile of the same work.
 */
import { createHandler } from "../routes/mod.ts";
import { loadConfig } from "../services/config.ts";
import { encodeBase64 } from "../lib/encoding.ts";
import { closePlatform, openPlatform } from "../services/platform.ts";
import type { Db } from "../db/driver.ts";
import { makeSandbox } from "../tests/harness.ts";
import { startWorkers } from "../workers/mod.ts";
import { processCpuMs, spawnReceiver, threadCpuMs, treeCpuMs } from "./_proc.ts";
import { ceiling, ramp } from "./_ramp.ts";
import { countRoundTrips } from "./_round_trips.ts";

const STEP_SECS = Number(Deno.env.get("BENCH_STEP_SECS") ?? 5);
const START = Number(Deno.env.get("BENCH_RATE_START") ?? 250);
const FACTOR = Number(Deno.env.get("BENCH_RATE_FACTOR") ?? 1.5);
const MAX = Number(Deno.env.get("BENCH_RATE_MAX") ?? 20_000);
const COST = Number(Deno.env.get("BENCH_COST") ?? 0);
const COST_RATE = Number(Deno.env.get("BENCH_COST_RATE") ?? 1000);
const BOUND_MS = 50;
const TARGET = 2000;

// The receiver runs in its own process, as a real webhook endpoint would.
const receiver = await spawnReceiver();
const receiverUrl = receiver.url;
const target = `${receiverUrl}/hook`;
const received = async () => Number(await (await fetch(receiverUrl)).text());
const loadAverage = async () => (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");

async function baseline(seconds: number, concurrency: number): Promise<number> {
  const body = JSON.stringify({ type: "bench", timestamp: new Date().toISOString(), data: { n: 1 } });
  let done = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const res = await fetch(target, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
      });
      await res.arrayBuffer();
      done++;
    }
  }));
  return done / seconds;
}

// A fresh data dir, and a fresh database when DATABASE_URL is set (dropped at the end).
const sandbox = await makeSandbox({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1", LOG_LEVEL: "error" });
const secretKey = sandbox.secretKey;
const config = loadConfig({
  ...sandbox.env,
  NOTIFY_CONCURRENCY: Deno.env.get("NOTIFY_CONCURRENCY") ?? "256",
});
const platform = await openPlatform(config);
const handler = createHandler(platform);
const workers = startWorkers(platform, { sweepEveryMs: 0 });
const headers = { apikey: secretKey, "content-type": "application/json" };
const call = (path: string, method: string, body: unknown) =>
  Promise.resolve(
    handler(new Request(`http://127.0.0.1${path}`, { method, headers, body: JSON.stringify(body) })),
  );

let sent = 0;
const sendOne = async () => {
  const res = await call("/v1/notifications/send", "POST", {
    channel: "webhook",
    recipient: target,
    event: "bench.tick",
    payload: { i: ++sent },
  });
  await res.arrayBuffer();
  return res.status === 200;
};

/** Offers `n` notifications at `rate` per second (open loop) and waits until the receiver has them all. */
async function fixedBatch(n: number, rate: number): Promise<void> {
  const goal = await received() + n;
  const t0 = performance.now();
  const offers: Promise<boolean>[] = [];
  while (offers.length < n) {
    const due = Math.min(n, Math.floor((performance.now() - t0) / 1000 * rate)) - offers.length;
    for (let k = 0; k < due; k++) offers.push(sendOne());
    await new Promise((r) => setTimeout(r, 20));
  }
  const refused = (await Promise.all(offers)).filter((ok) => !ok).length;
  if (refused > 0) throw new Error(`${refused} sends refused`);
  const end = performance.now() + 120_000;
  while (await received() < goal) {
    if (performance.now() > end) throw new Error(`${goal - await received()} notifications never arrived`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The cost per notification (BENCH_COST): CPU of this process and of its PostgreSQL backends, round trips. */
async function cost(db: Db): Promise<void> {
  const trips = countRoundTrips(db);
  let enqueues = 0;
  const enqueue = platform.kv.enqueue.bind(platform.kv);
  platform.kv.enqueue = (value, options) => {
    enqueues++;
    return enqueue(value, options);
  };
  await fixedBatch(Math.min(1000, COST), COST_RATE); // warm-up: compiled code, pooled connections
  const backends = db.kind === "postgres"
    ? (await db.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database()"))
      .map((r) => r.pid)
    : [];
  const trips0 = trips.total;
  const bySql0 = new Map(trips.bySql);
  const enqueues0 = enqueues;
  const threads0 = await threadCpuMs(Deno.pid);
  const cpu0 = await processCpuMs(Deno.pid);
  const pg0 = await Promise.all(backends.map((pid) => treeCpuMs(pid).catch(() => 0)));
  const t0 = performance.now();
  await fixedBatch(COST, COST_RATE);
  const secs = (performance.now() - t0) / 1000;
  const cpu = await processCpuMs(Deno.pid) - cpu0;
  const threads1 = await threadCpuMs(Deno.pid);
  const pg = (await Promise.all(backends.map((pid) => treeCpuMs(pid).catch(() => 0))))
    .reduce((sum, ms, i) => sum + ms - pg0[i]!, 0);
  const per = (x: number) => (x / COST).toFixed(3);
  console.log(
    `notifications cost (${platform.dbs.kind}, ${COST} notifications offered at ${COST_RATE}/s, done in ${
      secs.toFixed(1)
    } s, load average ${await loadAverage()})`,
  );
  console.log(`  platform process CPU       ${per(cpu)} ms per notification`);
  const byThread = [...threads1].map(([name, ms]) => [name, ms - (threads0.get(name) ?? 0)] as const)
    .filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
  for (const [name, ms] of byThread) console.log(`    thread ${name.padEnd(20)} ${per(ms)} ms`);
  if (backends.length > 0) {
    console.log(
      `  PostgreSQL backends CPU    ${per(pg)} ms per notification (${backends.length} connections)`,
    );
  }
  console.log(`  database round trips       ${per(trips.total - trips0)} per notification`);
  const bySql = [...trips.bySql].map(([sql, k]) => [sql, k - (bySql0.get(sql) ?? 0)] as const)
    .filter(([, k]) => k > 0).sort((a, b) => b[1] - a[1]);
  for (const [sql, k] of bySql) console.log(`    ${per(k)}  ${sql}`);
  console.log(`  KV enqueues                ${per(enqueues - enqueues0)} per notification`);
}

/** The ramp: steps of rising offered rate until saturation; prints the ceiling against the bare baseline. */
async function rampRun(db: Db, bare: number): Promise<void> {
  console.log(
    `notifications bench (${platform.dbs.kind}, steps of ${STEP_SECS}s from ${START}/s ×${FACTOR}, concurrency ${config.NOTIFY_CONCURRENCY})`,
  );
  const steps = await ramp({
    offer: () => sendOne(),
    finished: received,
    latency: async (from, to) => {
      // Stages: queued → claimed (the queue), claimed → sent (the HTTP POST and recording it).
      const [row] = await db.query<{ p50: number; p95: number; queue: number; send: number; http: number }>(
        `select percentile_cont(0.5) within group (order by total) as p50,
                percentile_cont(0.95) within group (order by total) as p95,
                percentile_cont(0.5) within group (order by queue) as queue,
                percentile_cont(0.5) within group (order by send) as send,
                percentile_cont(0.5) within group (order by http) as http
           from (select extract(epoch from (m.sent_at - m.queued_at)) * 1000 as total,
                        extract(epoch from (m.sending_at - m.queued_at)) * 1000 as queue,
                        extract(epoch from (m.sent_at - m.sending_at)) * 1000 as send,
                        (select max(a.duration_ms) from notifications.attempts a
                          where a.notification_id = m.id) as http
                   from notifications.messages m
                  where m.sent_at is not null and m.queued_at >= $1 and m.queued_at < $2) s`,
        [from.toISOString(), to.toISOString()],
      );
      return {
        p50: Number(row?.p50),
        p95: Number(row?.p95),
        stages: `queued→claimed p50 ${Number(row?.queue).toFixed(1)} ms, claimed→sent p50 ${
          Number(row?.send).toFixed(1)
        } ms (HTTP POST p50 ${Number(row?.http).toFixed(1)} ms)`,
      };
    },
  }, { start: START, factor: FACTOR, max: MAX, stepSecs: STEP_SECS, boundMs: BOUND_MS, drainSecs: 30 });
  const [twice] = await db.query<{ n: string }>(
    "select count(*) as n from notifications.messages where attempts > 1",
  );
  const [sentRows] = await db.query<{ n: string }>(
    "select count(*) as n from notifications.messages where status in ('sent', 'delivered')",
  );
  const { ceiling: best, capacity, p50AtCeiling } = ceiling(steps);
  console.log(
    `  bare fetch baseline        ${bare.toFixed(0)} req/s (concurrency ${config.NOTIFY_CONCURRENCY})`,
  );
  console.log(
    `  ceiling                    ${best.toFixed(0)} delivered/s (p50 queued→sent ${
      p50AtCeiling.toFixed(1)
    } ms); capacity when saturated ${capacity.toFixed(0)} delivered/s`,
  );
  const dupes = Number(await (await fetch(`${receiverUrl}/dupes`)).text());
  console.log(`  received / sent rows       ${await received()} / ${sentRows?.n}; ${dupes} received twice`);
  console.log(`  sent more than once        ${twice?.n} notifications took more than one attempt`);
  console.log(`  ratio ceiling/bare fetch   ${(best / bare).toFixed(3)}`);
  const met = best >= TARGET;
  console.log(
    `  target                     ≥ ${TARGET} delivered/s with p50 queued→sent ≤ ${BOUND_MS} ms: ${
      met ? "MET" : "MISSED"
    }`,
  );
}

try {
  await (await call("/v1/notifications/settings", "PATCH", {
    webhook: { secret: `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}` },
  })).arrayBuffer();

  const bare = COST > 0 ? 0 : await baseline(5, config.NOTIFY_CONCURRENCY);
  await (await fetch(receiverUrl, { method: "DELETE" })).arrayBuffer();

  const db = await platform.dbs.project(config.DEFAULT_PROJECT_REF);
  if (COST > 0) await cost(db);
  else await rampRun(db, bare);
} finally {
  await workers.stop();
  await closePlatform(platform);
  await receiver.stop();
  await sandbox.destroy();
}
