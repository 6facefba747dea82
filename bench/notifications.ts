/**
 * Notifications benchmark: webhook notifications to a local receiver, sustained, through the whole path
 * (POST /v1/notifications/send → project database → KV queue → dispatcher → signed HTTP POST).
 * Prints delivered/s, p50/p95 queued-to-sent, and the ratio against a bare baseline measured in the same run
 * (plain fetch POSTs to the same receiver at the same concurrency).
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/notifications.ts
 *   BENCH_SECONDS=30 BENCH_RATE=400 (offered notifications per second) DATABASE_URL=… (optional)
 */
import { createHandler } from "../routes/mod.ts";
import { loadConfig } from "../services/config.ts";
import { encodeBase64 } from "../lib/encoding.ts";
import { closePlatform, openPlatform } from "../services/platform.ts";
import { makeSandbox } from "../tests/harness.ts";
import { startWorkers } from "../workers/mod.ts";

const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 30);
const RATE = Number(Deno.env.get("BENCH_RATE") ?? 400);
const TICK_MS = 50;

// The receiver runs in its own process, as a real webhook endpoint would.
const receiver = new Deno.Command(Deno.execPath(), {
  args: ["run", "--allow-net", new URL("./_receiver.ts", import.meta.url).pathname],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const reader = receiver.stdout.pipeThrough(new TextDecoderStream()).getReader();
const port = Number((await reader.read()).value?.trim());
reader.releaseLock();
const receiverUrl = `http://127.0.0.1:${port}`;
const target = `${receiverUrl}/hook`;
const received = async () => Number(await (await fetch(receiverUrl)).text());

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
const config = loadConfig({ ...sandbox.env, NOTIFY_CONCURRENCY: Deno.env.get("NOTIFY_CONCURRENCY") ?? "32" });
const platform = await openPlatform(config);
const handler = createHandler(platform);
const workers = startWorkers(platform, { sweepEveryMs: 0 });
const headers = { apikey: secretKey, "content-type": "application/json" };
const call = (path: string, method: string, body: unknown) =>
  Promise.resolve(
    handler(new Request(`http://127.0.0.1${path}`, { method, headers, body: JSON.stringify(body) })),
  );

try {
  await (await call("/v1/notifications/settings", "PATCH", {
    webhook: { secret: `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}` },
  })).arrayBuffer();

  const bare = await baseline(Math.min(5, SECONDS), config.NOTIFY_CONCURRENCY);
  await (await fetch(receiverUrl, { method: "DELETE" })).arrayBuffer();

  // Offered load: RATE sends per second, open loop, for SECONDS.
  let offered = 0;
  let refused = 0;
  const sends: Promise<void>[] = [];
  const started = performance.now();
  const perTick = Math.max(1, Math.round(RATE * TICK_MS / 1000));
  while (performance.now() - started < SECONDS * 1000) {
    const tick = performance.now();
    for (let i = 0; i < perTick; i++) {
      offered++;
      sends.push(
        call("/v1/notifications/send", "POST", {
          channel: "webhook",
          recipient: target,
          event: "bench.tick",
          payload: { i: offered },
        }).then(async (res) => {
          if (res.status !== 200) refused++;
          await res.arrayBuffer();
        }),
      );
    }
    const wait = TICK_MS - (performance.now() - tick);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(sends);
  const deliveredInWindow = await received();
  const windowSecs = (performance.now() - started) / 1000;
  // Drain what is left (bounded), so the latency figures cover every notification.
  const db = await platform.dbs.project(config.DEFAULT_PROJECT_REF);
  const drainEnd = performance.now() + 60_000;
  while (performance.now() < drainEnd) {
    const [row] = await db.query<{ n: string }>(
      "select count(*) as n from notifications.messages where status in ('queued', 'sending', 'failed')",
    );
    if (Number(row?.n) === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const [lat] = await db.query<{ p50: number; p95: number; sent: string }>(
    `select percentile_cont(0.5) within group (order by ms) as p50,
            percentile_cont(0.95) within group (order by ms) as p95, count(*) as sent
       from (select extract(epoch from (sent_at - queued_at)) * 1000 as ms
               from notifications.messages where sent_at is not null) s`,
  );
  const deliveredPerSec = deliveredInWindow / windowSecs;
  console.log(`notifications bench (${platform.dbs.kind}, ${SECONDS}s, offered ${RATE}/s)`);
  console.log(
    `  bare fetch baseline       ${bare.toFixed(0)} req/s (concurrency ${config.NOTIFY_CONCURRENCY})`,
  );
  console.log(
    `  offered                   ${offered} (${
      (offered / windowSecs).toFixed(0)
    }/s of ${RATE}/s asked; ${refused} refused)`,
  );
  console.log(`  delivered in the window   ${deliveredInWindow} → ${deliveredPerSec.toFixed(0)} delivered/s`);
  console.log(`  delivered after draining  ${await received()} (sent rows ${lat?.sent})`);
  console.log(
    `  queued → sent             p50 ${Number(lat?.p50).toFixed(1)} ms, p95 ${
      Number(lat?.p95).toFixed(1)
    } ms`,
  );
  console.log(`  ratio delivered/bare      ${(deliveredPerSec / bare).toFixed(3)}`);
  const met = deliveredPerSec >= 300 && Number(lat?.p50) <= 100;
  console.log(`  target                    ≥ 300 delivered/s, p50 ≤ 100 ms: ${met ? "MET" : "MISSED"}`);
} finally {
  await workers.stop();
  await closePlatform(platform);
  receiver.kill("SIGTERM");
  await receiver.status;
  await receiver.stdout.cancel().catch(() => {});
  await sandbox.destroy();
}
