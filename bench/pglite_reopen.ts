/**
 * Reopen benchmark: one embedded database (db/pglite.ts) closed for idleness, then a first call that opens it
 * again, `BENCH_ROUNDS` times (default 8). Prints, for each round, the wall time of that first call, the CPU time
 * the process spent on it (from /proc: on a loaded machine the wall time mostly measures the load, the CPU time
 * much less so), the RSS while the database rests and once it is open again, and the load average.
 *
 *   deno run -A --unstable-worker-options bench/pglite_reopen.ts
 */
import { openPglite } from "../db/pglite.ts";
import { configurePglite, pgliteHealth } from "../db/pglite_health.ts";
import { setLogLevel } from "../lib/log.ts";
import { treeCpuMs, treeRss } from "./_proc.ts";

const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? 8);
/** How long the database rests before the call (its engine's thread has ended by then). */
const REST_MS = 1500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = async () => (await treeRss(Deno.pid)).bytes / 1048576;
const load = async () => (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];

setLogLevel("warn");
configurePglite({ idleSecs: 0.5 });
const dir = await Deno.makeTempDir({ prefix: "bench-pglite-reopen-" });
try {
  const db = await openPglite(dir, {
    searchPath: "public",
    closeWhenIdle: { dueAt: () => Promise.resolve(null) },
  });
  await db.exec("create table t (id int primary key); insert into t select generate_series(1, 1000)");
  const open = () => pgliteHealth().instances.find((i) => dir.endsWith(i.name))?.open;
  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    while (open()) await sleep(50);
    await sleep(REST_MS);
    const resting = await rssMb();
    const cpu = await treeCpuMs(Deno.pid);
    const t0 = performance.now();
    await db.query("select count(*) from t");
    const wall = performance.now() - t0;
    const spent = await treeCpuMs(Deno.pid) - cpu;
    rows.push(
      `round ${round}: first call ${wall.toFixed(0)} ms, CPU ${spent.toFixed(0)} ms, RSS resting ${
        resting.toFixed(0)
      } MB, open ${(await rssMb()).toFixed(0)} MB, load ${await load()}`,
    );
  }
  await db.close();
  console.log(rows.join("\n"));
} finally {
  await Deno.remove(dir, { recursive: true });
}
