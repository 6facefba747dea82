/**
 * Cluster benchmark: 1, 2 and 3 platform instances (child processes, each with its own DATA_DIR and Deno KV) on
 * one PostgreSQL. For each size, a burst of no-op jobs and then a burst of webhook notifications (to a receiver
 * in its own process) is posted round-robin to the instances by `BENCH_POSTERS` concurrent clients; each burst
 * is timed from the first item stored to the last one finished, as recorded in the project database. Prints
 * jobs/s and notifications/s, enqueue→start p50 and p99 (created_at → started_at, created_at → sending_at),
 * the CPU time per item of the instances (their process trees, from /proc), of this load generator and of the
 * PostgreSQL server's processes, the scaling ratio against one instance, and what bounds it: on a machine of C
 * cores, n instances plus PostgreSQL plus the load generator share those C cores, so the ratio cannot pass
 * C × 1000 / (CPU ms per item) ÷ (the 1-instance rate).
 *
 *   DATABASE_URL=postgres://… deno task bench cluster
 *   BENCH_CLUSTER_JOBS=4000 BENCH_CLUSTER_NOTIFICATIONS=2000 BENCH_POSTERS=64 BENCH_CLUSTER_SIZES=1,2,3
 */
import { encodeBase64 } from "../lib/encoding.ts";
import {
  type ChildPlatform,
  makeSandbox,
  ownDataDir,
  projectSql,
  type Sandbox,
  serverUrl,
  spawnPlatform,
} from "../tests/harness.ts";
import { spawnReceiver, treeCpuMs } from "./_proc.ts";

const JOBS = Number(Deno.env.get("BENCH_CLUSTER_JOBS") ?? 4000);
const NOTIFICATIONS = Number(Deno.env.get("BENCH_CLUSTER_NOTIFICATIONS") ?? 2000);
const POSTERS = Number(Deno.env.get("BENCH_POSTERS") ?? 64);
const SIZES = (Deno.env.get("BENCH_CLUSTER_SIZES") ?? "1,2,3").split(",").map(Number);
const NOOP = `export default { fetch() { return new Response("ok"); } };`;
const CORES = navigator.hardwareConcurrency;

if (!serverUrl) {
  console.log(
    "cluster bench: needs DATABASE_URL (a PostgreSQL server); PGlite is one process, not a cluster",
  );
  Deno.exit(0);
}

/** One burst's figures. */
interface Burst {
  perSec: number;
  p50: number;
  p99: number;
  /** The slowest enqueue→start, ms. */
  max: number;
  /** Seconds from the first item stored to the last (how long the posting took). */
  postSecs: number;
  /** CPU milliseconds per item: the instances, this load generator, the PostgreSQL server. */
  cpu: { instances: number; client: number; server: number };
}

/** CPU time (user + system), in ms, of one process (not its children). */
async function processCpuMs(pid: number | "self"): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in ticks of 10 ms (USER_HZ 100)
}

/** CPU time, in ms, of every process named `postgres` (the whole server: other clients' work included). */
async function serverCpuMs(): Promise<number> {
  let ms = 0;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      if ((await Deno.readTextFile(`/proc/${entry.name}/comm`)).trim() !== "postgres") continue;
      ms += await processCpuMs(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return ms;
}

/** The CPU counters of a burst: the instances' trees, this process, the server. */
async function cpuNow(
  instances: ChildPlatform[],
): Promise<{ instances: number; client: number; server: number }> {
  let sum = 0;
  for (const i of instances) sum += await treeCpuMs(i.process.pid);
  return { instances: sum, client: await processCpuMs("self"), server: await serverCpuMs() };
}

/** Posts `count` requests round-robin over the instances, POSTERS at a time; throws on a refusal. */
async function post(
  instances: ChildPlatform[],
  count: number,
  path: string,
  body: (i: number) => unknown,
  key: string,
) {
  let next = 0;
  const poster = async () => {
    while (next < count) {
      const i = next++;
      const res = await fetch(`${instances[i % instances.length]!.url}${path}`, {
        method: "POST",
        headers: { apikey: key, "content-type": "application/json" },
        body: JSON.stringify(body(i)),
      });
      await res.arrayBuffer();
      if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: POSTERS }, poster));
}

/** Waits until `done` reports `count` items, polling the database every 200 ms. */
async function until(sandbox: Sandbox, sql: string, count: number): Promise<void> {
  const deadline = Date.now() + 600_000;
  while (Number((await projectSql(sandbox, sql))[0]?.n) < count) {
    if (Date.now() > deadline) throw new Error(`Timed out: ${sql}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** One size: n instances, a job burst then a notification burst. */
async function measure(n: number, receiver: string): Promise<{ jobs: Burst; notifications: Burst }> {
  const sandbox = await makeSandbox({
    LOG_LEVEL: "error",
    INVOKE_RATE_PER_MIN: "100000000",
    NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
    JOBS_CONCURRENCY: Deno.env.get("JOBS_CONCURRENCY") ?? "64",
    NOTIFY_CONCURRENCY: Deno.env.get("NOTIFY_CONCURRENCY") ?? "64",
    WORK_POLL_MS: Deno.env.get("WORK_POLL_MS") ?? "200",
  });
  const places = [sandbox];
  for (let i = 1; i < n; i++) places.push(await ownDataDir(sandbox));
  const instances: ChildPlatform[] = [];
  try {
    for (const place of places) instances.push(await spawnPlatform({ ...place.env, LOG_LEVEL: "error" }));
    const key = sandbox.secretKey;
    const setup = async (path: string, method: string, body: unknown) => {
      const res = await fetch(`${instances[0]!.url}${path}`, {
        method,
        headers: { apikey: key, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}`);
    };
    await setup("/v1/functions", "POST", { name: "noop", runtime: "deno", code: NOOP });
    await setup("/v1/notifications/settings", "PATCH", {
      webhook: { secret: `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}` },
    });
    // Warm each instance's function host and connections.
    await post(instances, 20 * n, "/v1/functions/jobs", () => ({ function_name: "noop" }), key);
    await until(sandbox, "select count(*) as n from platform.jobs where status = 'completed'", 20 * n);

    const burst = async (
      send: () => Promise<void>,
      done: string,
      count: number,
      figures: string,
    ): Promise<Burst> => {
      const before = await cpuNow(instances);
      await send();
      await until(sandbox, done, count);
      const after = await cpuNow(instances);
      const [row] = await projectSql(sandbox, figures);
      const per = (k: keyof Burst["cpu"]) => (after[k] - before[k]) / count;
      return {
        perSec: Number(row.per_sec),
        p50: Number(row.p50),
        p99: Number(row.p99),
        max: Number(row.max),
        postSecs: Number(row.post_secs),
        cpu: { instances: per("instances"), client: per("client"), server: per("server") },
      };
    };
    const jobs = await burst(
      () =>
        post(instances, JOBS, "/v1/functions/jobs", (i) => ({ function_name: "noop", payload: { i } }), key),
      "select count(*) as n from platform.jobs where status = 'completed' and payload is not null",
      JOBS,
      `select count(*) / extract(epoch from max(completed_at) - min(created_at)) as per_sec,
              percentile_cont(0.5) within group (order by extract(epoch from started_at - created_at) * 1000) as p50,
              percentile_cont(0.99) within group (order by extract(epoch from started_at - created_at) * 1000) as p99,
              max(extract(epoch from started_at - created_at) * 1000) as max,
              extract(epoch from max(created_at) - min(created_at)) as post_secs
         from platform.jobs where payload is not null`,
    );
    const notifications = await burst(
      () =>
        post(instances, NOTIFICATIONS, "/v1/notifications/send", (i) => ({
          channel: "webhook",
          recipient: receiver,
          event: "bench",
          payload: { i },
        }), key),
      "select count(*) as n from notifications.messages where status in ('sent', 'delivered')",
      NOTIFICATIONS,
      `select count(*) / extract(epoch from max(coalesce(sent_at, delivered_at)) - min(created_at)) as per_sec,
              percentile_cont(0.5) within group (order by extract(epoch from sending_at - created_at) * 1000) as p50,
              percentile_cont(0.99) within group (order by extract(epoch from sending_at - created_at) * 1000) as p99,
              max(extract(epoch from sending_at - created_at) * 1000) as max,
              extract(epoch from max(created_at) - min(created_at)) as post_secs
         from notifications.messages`,
    );
    return { jobs, notifications };
  } finally {
    await Promise.all(instances.map((i) => i.stop()));
    for (const place of places.slice(1)) await place.destroy();
    await sandbox.destroy();
  }
}

// The receiver runs in its own process, as a real webhook endpoint would.
const receiver = await spawnReceiver();

try {
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  console.log(
    `cluster bench (PostgreSQL, ${CORES} cores, load average ${load} at the start; ${JOBS} jobs and ` +
      `${NOTIFICATIONS} webhooks per size, ${POSTERS} concurrent posters, round-robin)`,
  );
  const results = new Map<number, { jobs: Burst; notifications: Burst }>();
  for (const n of SIZES) results.set(n, await measure(n, `${receiver.url}/hook`));
  const one = results.get(SIZES[0]!)!;
  for (const kind of ["jobs", "notifications"] as const) {
    console.log(`  ${kind}`);
    for (const [n, r] of results) {
      const b = r[kind];
      const cpuPerItem = b.cpu.instances + b.cpu.client + b.cpu.server;
      console.log(
        `    ${n} instance${n > 1 ? "s" : " "}  ${b.perSec.toFixed(0).padStart(6)}/s  ×${
          (b.perSec / one[kind].perSec).toFixed(2)
        }  enqueue→start p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms, max ${
          b.max.toFixed(0)
        } ms (posted in ${b.postSecs.toFixed(2)} s)  CPU per item: instances ${
          b.cpu.instances.toFixed(2)
        } ms, load generator ${b.cpu.client.toFixed(2)} ms, PostgreSQL ${b.cpu.server.toFixed(2)} ms  ` +
          `(CPU-bound ceiling on ${CORES} cores: ${(CORES * 1000 / cpuPerItem).toFixed(0)}/s)`,
      );
    }
  }
  console.log(
    "  what bounds it: the instances, PostgreSQL and the load generator share the same cores; when the rate of a\n" +
      "  size is near its CPU-bound ceiling, more instances on this machine add CPU demand, not capacity. Scaling\n" +
      "  needs instances on their own machines, with PostgreSQL the shared resource (its CPU per item above).",
  );
} finally {
  await receiver.stop();
}
