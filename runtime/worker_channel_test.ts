import { assert, assertEquals } from "../tests/assert.ts";
import { Runtime } from "./supervisor.ts";
import { GET, OPTIONS, spec, text } from "./testing.ts";

Deno.test("runtime: a function's worker and its own connection to the platform", async (t) => {
  const rt = await Runtime.create({ ...OPTIONS, maxHosts: 4, maxHostsPerTenant: 4 }, () => {});
  try {
    await t.step("the function cannot open the runtime's sockets, its own included", async () => {
      const probe = spec(
        "probe",
        `export default async (req) => {
          const out = [];
          for (const path of JSON.parse(req.headers.get("x-sockets") ?? "[]")) {
            try { (await Deno.connect({ transport: "unix", path })).close(); out.push("connected"); }
            catch (e) { out.push(e.name); }
            out.push((await Deno.permissions.query({ name: "net", host: "unix:" + path })).state);
            out.push((await Deno.permissions.request({ name: "read", path })).state);
          }
          return Response.json(out);
        };`,
      );
      await rt.invoke(spec("other", "export default () => new Response('other')"), GET);
      assertEquals(text(await rt.invoke(probe, GET)), "[]");
      // Every host's socket, the probe's own among them, now that both hosts run.
      const sockets = [...Deno.readDirSync(rt.socketDir)].map((e) => `${rt.socketDir}/${e.name}`);
      assert(sockets.length >= 2, `sockets: ${sockets}`);
      const res = await rt.invoke(probe, { ...GET, headers: [["x-sockets", JSON.stringify(sockets)]] });
      const out = JSON.parse(text(res)) as string[];
      assertEquals(out.length, sockets.length * 3, text(res));
      assert(!out.includes("connected"), `a function reached a runtime socket: ${out}`);
      assert(!out.includes("granted"), `a function holds a permission on a runtime socket: ${out}`);
    });

    await t.step("a worker that crashes fails the calls it held and is replaced", async () => {
      const fn = spec(
        "crashy",
        `export default (req) => {
          if (new URL(req.url).pathname !== "/crash") return new Response("alive");
          setTimeout(() => { throw new Error("boom from a timer"); }, 10);
          return new Promise(() => {});
        };`,
      );
      assertEquals(text(await rt.invoke(fn, GET)), "alive");
      const crashed = await rt.invoke(fn, { ...GET, url: "http://localhost/crash" });
      assertEquals(crashed.outcome, "error");
      assert(text(crashed).includes("boom from a timer"), text(crashed));
      assertEquals(text(await rt.invoke(fn, GET)), "alive");
    });
  } finally {
    await rt.close();
  }
});
