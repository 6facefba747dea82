// The function sandbox's limits, measured on the real host processes from /proc: CPU time (a runaway is stopped
// for certain), memory off the V8 heap, no threads of a function's own, and raw answers that cannot touch the
// platform's cookies or CORS policy.
import wabtInit from "wabt";
import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const fixture = (name: string) => Deno.readTextFile(new URL(`./fixtures/${name}`, import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A /proc file of a process, or null once it is gone. */
function proc(pid: number, file: string): string | null {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/${file}`);
  } catch {
    return null;
  }
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces): state is [0], ppid [1]. */
const statFields = (pid: number) =>
  proc(pid, "stat")?.slice(proc(pid, "stat")!.lastIndexOf(")") + 2).split(" ");

/** CPU time (user + system, all threads) of a process in ms, or null once it is gone. */
function cpuMs(pid: number): number | null {
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12])) * 10 : null; // clock ticks of 10 ms (USER_HZ)
}

/** Private resident memory of a process in MiB (0 once it is gone). */
function anonMiB(pid: number): number {
  const kb = proc(pid, "status")?.match(/^RssAnon:\s+(\d+) kB/m)?.[1];
  return kb ? Number(kb) / 1024 : 0;
}

/** True while a process exists and is not a zombie. */
const running = (pid: number) => {
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== "Z";
};

/** The runtime hosts of the platform in this process: its child processes running runtime/host.ts. */
function hostPids(): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const pid = Number(entry.name);
    if (Number(statFields(pid)?.[1]) !== Deno.pid) continue;
    if (proc(pid, "cmdline")?.includes("runtime/host.ts")) pids.push(pid);
  }
  return pids;
}

/**
 * Waits until no host of the platform spins: over a window of 3 s of wall time, each host (or what is left of
 * it) uses under a tenth of a core. A loop that runs on keeps its host at a full core (or what the machine's
 * load leaves it). Fails when that is not so by `withinMs`.
 */
async function assertNoHostSpins(withinMs: number, what: string): Promise<void> {
  const until = Date.now() + withinMs;
  let spinning: string[] = [];
  while (Date.now() < until) {
    const before = new Map(hostPids().map((pid) => [pid, cpuMs(pid)]));
    await sleep(3000);
    spinning = [];
    for (const [pid, cpu] of before) {
      const used = (cpuMs(pid) ?? cpu ?? 0) - (cpu ?? 0);
      if (used > 300) spinning.push(`host ${pid} used ${used} ms of CPU in 3 s`);
    }
    if (spinning.length === 0) return;
  }
  throw new Error(`${what}: a host still spins ${withinMs} ms later: ${spinning.join("; ")}`);
}

Deno.test("functions: the sandbox's CPU, memory, thread and header limits hold (measured from /proc)", async (t) => {
  const p = await startPlatform({
    CORS_ORIGINS: "https://app.example",
    FUNCTIONS_TIMEOUT_MARGIN_MS: "1000",
    INVOKE_RATE_PER_MIN: "1000",
  });
  const deploy = async (
    name: string,
    code: string,
    permissions: Record<string, unknown> = {},
    runtime = "deno",
  ) => {
    const r = await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime, code, permissions },
      }),
    );
    assert(r.status === 201 || r.status === 200, `deploy ${name}: ${JSON.stringify(r.body)}`);
  };
  const invoke = (name: string, body: unknown = {}, headers: Record<string, string> = {}) =>
    p.fetch(`/v1/functions/${name}/invoke`, {
      method: "POST",
      headers: { apikey: p.publicKey, ...headers },
      json: body,
    });
  // Past timeout_secs (1 s) and the margin (1 s), the host is stopped; its CPU counter then stands still.
  const STOPPED_WITHIN_MS = 15_000;
  try {
    await deploy("fn", "export default () => new Response('fine')");

    await t.step("a deno loop past timeout_secs: 504, then its host stops using CPU", async () => {
      await deploy("loop", await fixture("infinite_loop.ts"), { timeout_secs: 1 });
      const res = await json(await invoke("loop"));
      assertEquals([res.status, res.body.error.code], [504, "TIMEOUT"]);
      await assertNoHostSpins(STOPPED_WITHIN_MS, "deno while(true)");
      assertEquals((await json(await invoke("fn"))).status, 200);
    });

    await t.step("a wasm `loop br 0` past timeout_secs: 504, then its host stops using CPU", async () => {
      const wabt = await wabtInit();
      const module = wabt.parseWat("loop.wat", await fixture("wasm/loop.wat"));
      const code = encodeBase64(module.toBinary({}).buffer);
      module.destroy();
      await deploy("wasm_loop", code, { timeout_secs: 1 }, "wasm");
      const res = await json(await invoke("wasm_loop"));
      assertEquals([res.status, res.body.error.code], [504, "TIMEOUT"]);
      await assertNoHostSpins(STOPPED_WITHIN_MS, "wasm loop br 0");
    });

    await t.step("a loop started after the answer draws on cpu_ms and is stopped", async () => {
      await deploy("after", await fixture("loop_after_answer.ts"), { timeout_secs: 1, cpu_ms: 300 });
      const res = await json(await invoke("after"));
      assertEquals([res.status, res.body.data.body], [200, "answered"]);
      await assertNoHostSpins(STOPPED_WITHIN_MS, "a loop after the answer");
      assertEquals((await json(await invoke("fn"))).status, 200);
    });

    await t.step(
      "a loop in a module's top-level code, loaded at deploy with no call, is stopped",
      async () => {
        await deploy("top", await fixture("top_level_loop.ts"), { timeout_secs: 1, cpu_ms: 100 });
        await assertNoHostSpins(STOPPED_WITHIN_MS, "a top-level loop loaded at deploy");
        const res = await json(await invoke("top"));
        assertEquals([res.status, res.body.error.code], [504, "TIMEOUT"]);
      },
    );

    await t.step(
      "CPU in short bursts, within timeout_secs but over cpu_ms: stopped, recorded as a timeout",
      async () => {
        await deploy("bursts", await fixture("cpu_bursts.ts"), { timeout_secs: 60, cpu_ms: 300 });
        // The first call of a host may also load the module: the calls measured here are later ones.
        assertEquals((await json(await invoke("bursts", { path: "/?total_ms=0" }))).status, 200);
        const within = await json(await invoke("bursts", { path: "/?total_ms=100" }));
        assertEquals([within.status, within.body.data.body.burned], [200, 100], "a call within its CPU time");
        const over = await json(await invoke("bursts", { path: "/?total_ms=10000" }));
        assertEquals([over.status, over.body.error.code], [504, "TIMEOUT"]);
        assertMatch(over.body.error.message, /CPU time of 300 ms/);
        await assertNoHostSpins(STOPPED_WITHIN_MS, "CPU bursts");
        const stats = await json(
          await p.fetch("/v1/functions/bursts/stats?window=1h", { headers: { apikey: p.secretKey } }),
        );
        assertEquals([stats.body.data.count, stats.body.data.timeouts], [3, 1]);
        assertEquals(
          (await json(await invoke("bursts", { path: "/?total_ms=0" }))).status,
          200,
          "a fresh host",
        );
      },
    );

    await t.step(
      "300 × 1 MiB off the V8 heap with memory_mb 64: FUNCTION_OOM, its host stopped short",
      async () => {
        await deploy("offheap", await fixture("offheap_hog.ts"), { memory_mb: 64, timeout_secs: 60 });
        const { pid } = (await json(await invoke("offheap", { path: "/pid" }))).body.data.body;
        const atRest = anonMiB(pid);
        let peak = 0;
        let watching = true;
        const watcher = (async () => {
          while (watching) {
            peak = Math.max(peak, anonMiB(pid));
            await sleep(10);
          }
        })();
        const res = await json(await invoke("offheap"));
        watching = false;
        await watcher;
        assertEquals([res.status, res.body.error?.code], [500, "FUNCTION_OOM"], JSON.stringify(res.body));
        assertMatch(res.body.error.message, /out of memory \(memory_mb 64\)/);
        assert(!running(pid), "the host that held the memory is gone");
        assert(
          peak < atRest + 300,
          `the host went from ${atRest} to ${peak} MiB of private memory: stopped before it held 300 MiB more`,
        );
        assertEquals((await json(await invoke("fn"))).status, 200, "the platform and other functions live");
        const stats = await json(
          await p.fetch("/v1/functions/offheap/stats?window=1h", { headers: { apikey: p.secretKey } }),
        );
        assertEquals(stats.body.data.oom, 1);
      },
    );

    await t.step(
      "no nested workers: Worker and node:worker_threads refuse, the host starts no thread",
      async () => {
        await deploy("nested", await fixture("nested_workers.ts"));
        const { pid } = (await json(await invoke("nested", { path: "/pid" }))).body.data.body;
        const threads = () => [...Deno.readDirSync(`/proc/${pid}/task`)].length;
        // The host starts one helper thread of its own after its first call: counted from the second on.
        await invoke("nested", { path: "/pid" }).then(json);
        await sleep(500);
        const before = threads();
        const res = await json(await invoke("nested"));
        assertEquals(res.status, 200, JSON.stringify(res.body));
        const r = res.body.data.body;
        for (const way of ["web", "node", "builtin"]) {
          assertEquals(r[way], Array(10).fill("NotCapable"), `${way}: ${r[way]}`);
        }
        assertEquals(r.sharedWorker, "undefined");
        assertEquals(r.internals, "undefined", "Deno's internals (and with them its ops) are out of reach");
        await sleep(500);
        assert(running(pid));
        assert(threads() <= before, `the host had ${before} threads, then ${threads()}`);
      },
    );

    await t.step("raw mode: a function cannot set or clear the console cookie, nor widen CORS", async () => {
      await deploy("cookies", await fixture("cookie_cors.ts"));
      const raw = { "x-service-invoke-mode": "raw" };
      for (const origin of ["https://evil.example", "https://app.example"]) {
        const res = await invoke("cookies", {}, { ...raw, origin });
        assertEquals([res.status, await res.text()], [200, "cookies and cors"]);
        assertEquals(res.headers.get("x-service-invoke-origin"), "function");
        assertEquals(res.headers.getSetCookie(), ["fn_pref=dark; Path=/"], "the function's own cookie only");
        assertEquals(res.headers.get("clear-site-data"), null);
        const allowed = origin === "https://app.example" ? origin : null;
        assertEquals(res.headers.get("access-control-allow-origin"), allowed, origin);
        for (const name of ["allow-credentials", "allow-methods", "allow-headers", "max-age"]) {
          assertEquals(res.headers.get(`access-control-${name}`), null, `${origin}: ${name}`);
        }
        const exposed = res.headers.get("access-control-expose-headers");
        assert(exposed === null || !exposed.includes("*"), `${origin}: expose ${exposed}`);
      }
    });
  } finally {
    await p.close();
  }
});
