import { assert, assertEquals } from "../tests/assert.ts";
import { Runtime } from "./supervisor.ts";
import { GET, OPTIONS, spec, text } from "./testing.ts";

/** Polls `done` every 50 ms, at most `tries` times; true once it held. */
async function until(done: () => boolean, tries = 400): Promise<boolean> {
  for (let i = 0; i < tries && !done(); i++) await new Promise((r) => setTimeout(r, 50));
  return done();
}

/** Whether a process with this id is running (not a zombie). */
async function running(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/**
 * The process ids of the hosts of the runtime whose sockets live in `socketDir`: children of this process whose
 * command line names it (test files running beside this one start hosts of their own in the same process).
 */
async function children(socketDir: string): Promise<number[]> {
  const out: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== Deno.pid) continue;
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes(socketDir)) out.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return out;
}

Deno.test("runtime: an idle spare host is stopped, an idle host exits, and calls after either still work", async (t) => {
  // The spare goes well before the serving host: the two idle intervals are told apart by state, not by time.
  const rt = await Runtime.create({ ...OPTIONS, idleMs: 8_000, spareIdleMs: 1_000 }, () => {});
  try {
    const counter = spec("counter", "let n = 0; export default () => new Response(String(++n));");
    const before = new Set(await children(rt.socketDir));

    await t.step("the first call starts a host and a spare host for the next cold start", async () => {
      assertEquals(text(await rt.invoke(counter, GET)), "1");
      assert(await until(() => rt.stats().spares === 1), "a spare host was started");
      assertEquals(rt.stats().hosts, 1);
    });

    await t.step(
      "the spare host, not taken, is stopped and its process exits; the warm host stays",
      async () => {
        const spawned = (await children(rt.socketDir)).filter((pid) => !before.has(pid));
        assertEquals(spawned.length, 2, "the serving host and the spare");
        assert(await until(() => rt.stats().spares === 0), "the spare was dropped");
        let alive = spawned;
        for (let i = 0; i < 100 && alive.length > 1; i++) {
          await new Promise((r) => setTimeout(r, 50));
          alive = (await Promise.all(spawned.map(async (pid) => (await running(pid)) ? pid : 0))).filter(
            Boolean,
          );
        }
        assertEquals(alive.length, 1, "one host process left: the serving one");
        assertEquals(rt.stats().hosts, 1);
        assertEquals(text(await rt.invoke(counter, GET)), "2", "the warm host kept its state");
      },
    );

    await t.step("a cold start without a spare spawns its own host", async () => {
      const fresh = spec("fresh", "export default () => new Response('fresh')");
      assertEquals(text(await rt.invoke(fresh, GET)), "fresh");
      assertEquals(rt.stats().hosts, 2);
    });

    await t.step("a host without calls for idleMs exits, and the next call starts a new one", async () => {
      const hostPids = (await children(rt.socketDir)).filter((pid) => !before.has(pid));
      assert(await until(() => rt.stats().hosts === 0 && rt.stats().spares === 0), "every host was stopped");
      let left = hostPids.length;
      for (let i = 0; i < 100 && left > 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        left = (await Promise.all(hostPids.map(running))).filter(Boolean).length;
      }
      assertEquals(left, 0, "no host process is left");
      assertEquals(text(await rt.invoke(counter, GET)), "1", "a new host: the count starts again");
      assertEquals(rt.stats().hosts, 1);
    });
  } finally {
    await rt.close();
  }
});
