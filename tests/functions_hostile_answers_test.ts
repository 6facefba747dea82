// What a function answers, and what a caller sends it, cannot hurt the platform: served by a spawned platform
// (a real HTTP server: the first defect here was a panic of Deno's HTTP writer, which ends the process).
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { makeSandbox, spawnPlatform } from "./harness.ts";

Deno.test("functions: hostile answers and inputs get a clear answer and the platform keeps serving", async (t) => {
  const sandbox = await makeSandbox();
  const platform = await spawnPlatform(sandbox.env);
  const service = { apikey: sandbox.secretKey, "content-type": "application/json" };
  const deploy = async (name: string, code: string) => {
    const res = await fetch(`${platform.url}/v1/functions`, {
      method: "POST",
      headers: service,
      body: JSON.stringify({ name, runtime: "deno", code }),
    });
    const text = await res.text();
    assert(res.status < 300, `deploy ${name}: ${text}`);
  };
  const invoke = (name: string, body: unknown = {}, headers: Record<string, string> = {}) =>
    fetch(`${platform.url}/v1/functions/${name}/invoke`, {
      method: "POST",
      headers: { apikey: sandbox.publicKey, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const raw = { "x-service-invoke-mode": "raw" };
  const healthy = async () => {
    const res = await fetch(`${platform.url}/v1/health`);
    await res.body?.cancel();
    assertEquals(res.status, 200, "the platform still answers");
  };
  try {
    // A Response whose headers getter answers what no Headers object would hold.
    await deploy(
      "bad_headers",
      `class Odd extends Response {
        get headers() {
          return new Map([
            ["x-ok", "fine"], ["x-ctl", "a\\u0001b"], ["bad name", "v"], ["constructor", "c"],
            ["X-Service-Invoke-Origin", "platform"], ["Content-Length", "999"], ["x-del", "a\\u007fb"],
          ]);
        }
      }
      export default () => new Odd("hi", { headers: { "content-type": "text/plain" } });`,
    );
    await deploy("reset", `export default () => new Response(null, { status: 205 });`);
    await deploy("echo_header", `export default (req) => new Response(req.headers.get("x-in") ?? "none");`);
    await deploy(
      "prints",
      `export default () => {
        Deno.stdout.writeSync(new TextEncoder().encode("to stdout\\n"));
        Deno.stderr.writeSync(new TextEncoder().encode("to stderr\\n"));
        Deno.stdout.writeSync(new TextEncoder().encode("no newline"));
        return new Response("printed");
      };`,
    );
    await deploy(
      "floods",
      `export default () => {
        for (let i = 0; i < 5000; i++) Deno.stdout.writeSync(new TextEncoder().encode("flood " + i + "\\n"));
        return new Response("flooded");
      };`,
    );

    await t.step(
      "response headers HTTP cannot carry are dropped, in raw mode and in the envelope",
      async () => {
        const res = await invoke("bad_headers", {}, raw);
        assertEquals(res.status, 200);
        assertEquals(await res.text(), "hi");
        assertEquals(res.headers.get("x-ok"), "fine");
        assertEquals(res.headers.get("x-ctl"), null);
        assertEquals(res.headers.get("x-del"), null);
        assertEquals(
          res.headers.get("x-service-invoke-origin"),
          "function",
          "the function cannot claim the origin",
        );
        await healthy();
        const envelope = await invoke("bad_headers");
        const { data } = await envelope.json();
        assertEquals(data.headers["x-ok"], "fine");
        assertEquals(
          data.headers["constructor"],
          "c",
          "a header named like an Object member is its own value",
        );
        assertEquals(data.headers["x-ctl"], undefined);
        assertEquals(data.headers["bad name"], undefined);
        assertEquals(data.headers["x-service-invoke-origin"], "platform", "in the envelope, it is only data");
        await healthy();
      },
    );

    await t.step("raw mode passes a 205 without a body", async () => {
      const res = await invoke("reset", {}, raw);
      assertEquals(res.status, 205);
      assertEquals(await res.text(), "");
    });

    await t.step("caller headers HTTP cannot carry are 400, and the function is not run", async () => {
      for (const value of ["a\u0001b", "euro €", "a\u007fb"]) {
        const res = await invoke("echo_header", { headers: { "x-in": value } });
        assertEquals(res.status, 400, JSON.stringify(value));
        assertMatch((await res.json()).error.message, /x-in/);
      }
      const latin1 = await invoke("echo_header", { headers: { "x-in": "caf\u00e9\tok" } }, raw);
      assertEquals(latin1.status, 200);
      await latin1.body?.cancel();
    });

    await t.step("a function name with a NUL is 404, for invoke and for the management routes", async () => {
      const res = await invoke("a%00b");
      assertEquals(res.status, 404);
      assertEquals((await res.json()).error.code, "NOT_FOUND");
      const get = await fetch(`${platform.url}/v1/functions/a%00b`, { headers: service });
      assertEquals(get.status, 404);
      await get.body?.cancel();
    });

    await t.step("Deno.stdout and Deno.stderr go to the function's log, within its log budget", async () => {
      const res = await invoke("prints");
      assertEquals(res.status, 200);
      assertEquals((await res.json()).data.body, "printed");
      await healthy();
      const logsOf = async (name: string) => {
        const res = await fetch(`${platform.url}/v1/functions/${name}/logs`, { headers: service });
        return (await res.json()).data as { level: string; message: string }[];
      };
      const printed = await logsOf("prints");
      assert(printed.some((l) => l.level === "info" && l.message === "to stdout"), JSON.stringify(printed));
      assert(printed.some((l) => l.level === "error" && l.message === "to stderr"), JSON.stringify(printed));
      assert(printed.some((l) => l.message === "no newline"), "a last line without a newline is kept");
      const flood = await invoke("floods");
      assertEquals((await flood.json()).data.body, "flooded");
      await healthy();
      const flooded = await logsOf("floods");
      assert(
        flooded.some((l) => /log lines dropped/.test(l.message)),
        "the flood is cut, and the cut is logged",
      );
    });
  } finally {
    await platform.stop("SIGTERM");
    await sandbox.destroy();
  }
});
