import { assert, assertEquals } from "../tests/assert.ts";
import { Runtime, RuntimeUnavailable } from "./supervisor.ts";
import { GET, OPTIONS, spec, text } from "./testing.ts";

Deno.test("runtime supervisor: reuse, caps, idle eviction, crash restart, private net", async (t) => {
  const logs: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("inside"));
  const other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("other"));
  const rt = await Runtime.create(
    { ...OPTIONS, allowPrivateNet: ["127.0.0.1"] },
    (_id, _level, line) => logs.push(line),
  );
  try {
    await t.step("a warm host serves later calls and concurrent calls", async () => {
      const counter = spec("counter", "let n = 0; export default () => new Response(String(++n));");
      assertEquals(text(await rt.invoke(counter, GET)), "1");
      assertEquals(text(await rt.invoke(counter, GET)), "2");
      const many = await Promise.all(Array.from({ length: 20 }, () => rt.invoke(counter, GET)));
      assertEquals(many.map(text).map(Number).sort((a, b) => a - b)[19], 22);
      assertEquals(rt.stats().hosts, 1);
    });

    await t.step(
      "a spare host of the same shape is kept ready and used by the next new function",
      async () => {
        for (let i = 0; i < 100 && rt.stats().spares === 0; i++) await new Promise((r) => setTimeout(r, 50));
        assertEquals(rt.stats().spares, 1);
        const fresh = spec("fresh", "export default () => new Response('fresh')");
        assertEquals(text(await rt.invoke(fresh, GET)), "fresh");
        assertEquals(rt.stats().hosts, 2);
      },
    );

    await t.step("a start takes the spare of its shape even while that spare is still starting", async () => {
      const rt2 = await Runtime.create({ ...OPTIONS, maxHosts: 6 }, () => {});
      try {
        const fn = (name: string) => spec(name, `export default () => new Response("${name}")`);
        assertEquals(text(await rt2.invoke(fn("a0"), GET)), "a0"); // its start began a spare
        // a1 takes that spare, ready or still starting, and begins the next, which a2 takes: if a start passed
        // over a spare that is still starting, that spare would be left over here.
        const calls = [rt2.invoke(fn("a1"), GET), rt2.invoke(fn("a2"), GET)];
        assertEquals(rt2.stats().spares, 0);
        assertEquals((await Promise.all(calls)).map(text), ["a1", "a2"]);
        assertEquals(rt2.stats().hosts, 3);
      } finally {
        await rt2.close();
      }
    });

    await t.step(
      "an address the operator opened is reachable on the ports allow_net lists only",
      async () => {
        const code = `export default async (req: Request) => {
        const out = [];
        for (const url of ${
          JSON.stringify([`http://127.0.0.1:${server.addr.port}/`, `http://127.0.0.1:${other.addr.port}/`])
        }) {
          try { out.push(await (await fetch(url)).text()); } catch (e) { out.push(e.name); }
        }
        return new Response(out.join(","));
      }`;
        const fn = spec("net", code, { allowNet: [`127.0.0.1:${server.addr.port}`] });
        assertEquals(text(await rt.invoke(fn, GET)), "inside,NotCapable");
      },
    );

    await t.step("the host cap evicts the least recently used idle host", async () => {
      await rt.invoke(spec("a", "export default () => new Response('a')"), GET);
      assertEquals(rt.stats().hosts, 3);
      await rt.invoke(spec("b", "export default () => new Response('b')"), GET);
      assertEquals(rt.stats().hosts, 3, "never above maxHosts");
      assertEquals(text(await rt.invoke(spec("a", "export default () => new Response('a')"), GET)), "a");
    });

    await t.step("a crashed host is replaced on the next call", async () => {
      const fn = spec(
        "crash",
        "const keep: unknown[] = []; export default (req: Request) => { if (new URL(req.url).pathname === '/hog') for (;;) keep.push(new Array(1e6).fill(1)); return new Response('alive'); }",
        { memoryMb: 32 },
      );
      assertEquals(text(await rt.invoke(fn, GET)), "alive");
      const hog = await rt.invoke(fn, { ...GET, url: "http://localhost/hog" });
      assertEquals(hog.outcome, "oom");
      assertEquals(text(await rt.invoke(fn, GET)), "alive");
    });

    await t.step("a module that fails to load gives a clear error on each call", async () => {
      const r = await rt.invoke(spec("broken", "throw new Error('top-level failure');"), GET);
      assertEquals(r.outcome, "error");
      assert(text(r).includes("top-level failure"), text(r));
      const none = await rt.invoke(spec("nohandler", "export const x = 1;"), GET);
      assert(text(none).includes("no handler"), text(none));
    });
  } finally {
    await rt.close();
    await server.shutdown();
    await other.shutdown();
  }

  await t.step("a tenant at its share is refused alone; other tenants still start hosts", async () => {
    const shared = await Runtime.create({ ...OPTIONS, maxHosts: 3, maxHostsPerTenant: 1 }, () => {});
    try {
      const slowCode =
        "export default async () => { await new Promise((r) => setTimeout(r, 1500)); return new Response('done'); }";
      const slow = shared.invoke(spec("a-slow", slowCode, { tenant: "a" }), GET);
      // Bounded wait until the busy host exists (no timing assertion).
      for (let i = 0; i < 100 && shared.stats().hosts < 1; i++) await new Promise((r) => setTimeout(r, 20));
      let refused: unknown = null;
      await shared.invoke(spec("a-other", "export default () => new Response('a')", { tenant: "a" }), GET)
        .catch((e) => refused = e);
      assert(refused instanceof RuntimeUnavailable, String(refused));
      assert((refused as Error).message.includes("share"));
      const b = await shared.invoke(
        spec("b-fn", "export default () => new Response('b')", { tenant: "b" }),
        GET,
      );
      assertEquals(text(b), "b");
      assertEquals(text(await slow), "done");
      // Once its host is idle, the tenant makes room by stopping its own idle host.
      const again = await shared.invoke(
        spec("a-other", "export default () => new Response('a')", { tenant: "a" }),
        GET,
      );
      assertEquals(text(again), "a");
    } finally {
      await shared.close();
    }
  });

  await t.step("at capacity with no idle host to stop: RuntimeUnavailable (503)", async () => {
    const full = await Runtime.create({ ...OPTIONS, maxHosts: 1 }, () => {});
    try {
      const slow = full.invoke(
        spec(
          "slow",
          "export default async () => { await new Promise((r) => setTimeout(r, 800)); return new Response('done'); }",
        ),
        GET,
      );
      await new Promise((r) => setTimeout(r, 300));
      let refused: unknown = null;
      await full.invoke(spec("other", "export default () => new Response('x')"), GET).catch((e) =>
        refused = e
      );
      assert(refused instanceof RuntimeUnavailable, String(refused));
      assert((refused as Error).message.includes("capacity"));
      assertEquals(text(await slow), "done");
      assertEquals(
        text(await full.invoke(spec("other", "export default () => new Response('x')"), GET)),
        "x",
      );
    } finally {
      await full.close();
    }
  });

  await t.step("idle hosts are stopped", async () => {
    const idle = await Runtime.create({ ...OPTIONS, idleMs: 300 }, () => {});
    try {
      await idle.invoke(spec("idle", "export default () => new Response('x')"), GET);
      assertEquals(idle.stats().hosts, 1);
      for (let i = 0; i < 40 && idle.stats().hosts > 0; i++) await new Promise((r) => setTimeout(r, 100));
      assertEquals(idle.stats().hosts, 0);
    } finally {
      await idle.close();
    }
  });
});

Deno.test("runtime supervisor: a call after a retire never goes to the retired host", async () => {
  const rt = await Runtime.create({ ...OPTIONS, maxHosts: 2 }, () => {});
  try {
    const fn = spec(
      "again",
      `const born = Date.now();
      export default async (req) => {
        if (new URL(req.url).pathname === "/slow") await new Promise((r) => setTimeout(r, 400));
        return new Response(String(born));
      };`,
    );
    const first = text(await rt.invoke(fn, GET));
    // Another function takes the spare host: the next start of "again" must spawn, which takes a while.
    assertEquals(text(await rt.invoke(spec("other", "export default () => new Response('b')"), GET)), "b");
    const slow = rt.invoke(fn, { ...GET, url: "http://localhost/slow" }); // keeps the old host busy
    rt.retire(fn.functionId);
    // The same version at once, twice (a rollback, a reactivation): both go to its new host, not to the
    // retired one, which is stopped as soon as its last call ends.
    const again = await Promise.all([rt.invoke(fn, GET), rt.invoke(fn, GET)]);
    assertEquals(again.map((r) => r.outcome), ["ok", "ok"]);
    for (const r of again) assert(text(r) !== first, "the retired host answered");
    assertEquals(text(await slow), first);
  } finally {
    await rt.close();
  }
});
