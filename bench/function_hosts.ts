/**
 * Function hosts at rest: what a runtime's processes hold after one deployed function was called once, and what
 * is released as it stays idle. The runtime (runtime/supervisor.ts) runs in this process; the resident memory
 * of its children (the function's host and the spare host started for the next cold start) is read from /proc.
 * Then the same from outside: a platform (`main.ts`, PGlite, FUNCTIONS_IDLE_SECS=60) with one function called
 * once, the RSS of its whole process tree after 5, 40 and 70 s.
 *
 *   deno run -A --unstable-worker-options bench/function_hosts.ts
 *   BENCH_REST_SECS=5 (rest after the call) BENCH_SPARE_SECS=10 (a spare host not taken is stopped after this
 *   long; as before this change when equal to BENCH_IDLE_SECS)
 *   BENCH_IDLE_SECS=20 (FUNCTIONS_IDLE_SECS of the runtime)
 */
import { Runtime } from "../runtime/supervisor.ts";
import { GET, OPTIONS, spec, text } from "../runtime/testing.ts";
import { makeSandbox, spawnPlatform } from "../tests/harness.ts";
import { processTree, treeRss } from "./_proc.ts";

const REST_SECS = Number(Deno.env.get("BENCH_REST_SECS") ?? 5);
const SPARE_SECS = Number(Deno.env.get("BENCH_SPARE_SECS") ?? 10);
const IDLE_SECS = Number(Deno.env.get("BENCH_IDLE_SECS") ?? 20);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident memory of each child process of this one (the hosts), in MB. */
async function hosts(): Promise<number[]> {
  const out: number[] = [];
  for (const pid of (await processTree(Deno.pid)).slice(1)) {
    const { bytes } = await treeRss(pid);
    if (bytes > 0) out.push(bytes / 1048576);
  }
  return out;
}

async function report(when: string, t0: number): Promise<void> {
  const mb = await hosts();
  const total = mb.reduce((a, b) => a + b, 0);
  const each = mb.map((m) => m.toFixed(1)).join(" + ");
  console.log(
    `${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s  ${
      when.padEnd(44)
    } ${mb.length} host process${mb.length === 1 ? "" : "es"}, ${total.toFixed(1)} MB${
      mb.length > 1 ? ` (${each})` : ""
    }`,
  );
}

const rt = await Runtime.create(
  { ...OPTIONS, idleMs: IDLE_SECS * 1000, spareIdleMs: SPARE_SECS * 1000 },
  () => {},
);
try {
  const t0 = performance.now();
  const fn = spec("hello", "export default () => new Response('hello')");
  if (text(await rt.invoke(fn, GET)) !== "hello") throw new Error("the call failed");
  await sleep(REST_SECS * 1000);
  await report("one call, then at rest", t0);
  while (rt.stats().spares > 0) await sleep(250);
  await sleep(1000); // the killed process is reaped
  await report(`after the spare timeout (${SPARE_SECS} s)`, t0);
  while (rt.stats().hosts + rt.stats().spares > 0) await sleep(250);
  await sleep(1000); // the killed processes are reaped
  await report(`after FUNCTIONS_IDLE_SECS (${IDLE_SECS} s)`, t0);
  if (text(await rt.invoke(fn, GET)) !== "hello") throw new Error("the call after idle failed");
  await report("a call after idle (a new host)", t0);
} finally {
  await rt.close();
}

// The same seen from outside: a whole platform (`main.ts`, PGlite) with one deployed function, called once.
const sandbox = await makeSandbox();
const env: Record<string, string> = { ...Deno.env.toObject(), ...sandbox.env, FUNCTIONS_IDLE_SECS: "60" };
delete env.DATABASE_URL;
const platform = await spawnPlatform(env);
try {
  const t0 = performance.now();
  const tree = async (when: string) => {
    const { bytes, processes } = await treeRss(platform.process.pid);
    console.log(
      `${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s  platform ${
        when.padEnd(35)
      } ${processes} ` +
        `processes, ${(bytes / 1048576).toFixed(1)} MB`,
    );
  };
  const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
  const code = "export default () => new Response('hello')";
  const deployed = await fetch(`${platform.url}/v1/functions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name: "hello", runtime: "deno", code }),
  });
  if (deployed.status !== 201) throw new Error(`deploy: ${deployed.status} ${await deployed.text()}`);
  const call = await fetch(`${platform.url}/functions/v1/hello`, { method: "POST", headers });
  if ((await call.text()) !== "hello") throw new Error("the call failed");
  for (const [at, when] of [[5, "called once, at rest"], [40, "past the spare timeout (30 s)"]] as const) {
    await sleep(at * 1000 - (performance.now() - t0));
    await tree(when);
  }
  await sleep(70_000 - (performance.now() - t0));
  await tree("past FUNCTIONS_IDLE_SECS (60 s)");
} finally {
  await platform.stop();
  await sandbox.destroy();
}
