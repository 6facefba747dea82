import wabtInit from "wabt";
import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const wabt = await wabtInit();

/** Compiles a WAT fixture to a wasm module, base64 as deploy takes it. */
async function compile(name: string): Promise<string> {
  const text = await Deno.readTextFile(new URL(`./fixtures/wasm/${name}.wat`, import.meta.url));
  const module = wabt.parseWat(`${name}.wat`, text);
  try {
    return encodeBase64(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}

Deno.test("functions: wasm runtime, WAGI contract and hostile modules", async (t) => {
  const p = await startPlatform();
  const deploy = async (
    name: string,
    fixture: string,
    permissions: Record<string, unknown> = {},
    env_vars = {},
  ) =>
    await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "wasm", code: await compile(fixture), permissions, env_vars },
      }),
    );
  const invoke = (name: string, body: unknown = {}, headers: Record<string, string> = {}) =>
    p.fetch(`/v1/functions/${name}/invoke`, {
      method: "POST",
      headers: { apikey: p.publicKey, ...headers },
      json: body,
    });
  try {
    await t.step("deploy: a WASI module is stored with its code and hash", async () => {
      const r = await deploy("echo", "echo");
      assertEquals(r.status, 201);
      assertEquals(r.body.data.runtime, "wasm");
      assertEquals(r.body.data.code, await compile("echo"));
      assertMatch(r.body.data.code_hash, /^[0-9a-f]{64}$/);
    });

    await t.step("echo: body on stdin, stdout after the header block is the body (binary safe)", async () => {
      const bytes = new Uint8Array([1, 2, 3, 0, 255, 104, 105]);
      const res = await json(await invoke("echo", { body: encodeBase64(bytes), body_encoding: "base64" }));
      assertEquals(res.status, 200);
      assertEquals(res.body.data.status, 200);
      assertEquals(res.body.data.headers["content-type"], "application/octet-stream");
      assertEquals(res.body.data.body_encoding, "base64");
      assertEquals(res.body.data.body, encodeBase64(bytes));
      const text = await invoke("echo", { body: "round trip" }, { "x-service-invoke-mode": "raw" });
      assertEquals(text.headers.get("x-service-invoke-origin"), "function");
      assertEquals(await text.text(), "round trip");
    });

    await t.step("status and headers from the CGI header block", async () => {
      await deploy("status", "status_headers");
      const res = await json(await invoke("status"));
      assertEquals(res.body.data.status, 201);
      assertEquals(res.body.data.headers["x-wasm"], "yes");
      assertEquals(res.body.data.body, { created: true });
      const raw = await invoke("status", {}, { "x-service-invoke-mode": "raw" });
      assertEquals(raw.status, 201);
      assertEquals(raw.headers.get("content-type"), "application/json");
      assertEquals(await raw.json(), { created: true });
    });

    await t.step(
      "output without a header block is a 200 text/plain body; stderr lines are data.logs",
      async () => {
        await deploy("hello", "hello_logs");
        const res = await json(await invoke("hello"));
        assertEquals(res.body.data.status, 200);
        assertMatch(res.body.data.headers["content-type"], /^text\/plain/);
        assertEquals(res.body.data.body, "hello from wasm");
        assertEquals(res.body.data.logs, ["first log line", "second log line"]);
        const logs = await json(
          await p.fetch("/v1/functions/hello/logs", { headers: { apikey: p.secretKey } }),
        );
        assertEquals(logs.body.data.map((l: { message: string }) => l.message).slice(0, 2), [
          "second log line",
          "first log line",
        ]);
      },
    );

    await t.step("environment: CGI variables and the function's env_vars", async () => {
      await deploy("env", "env", {}, { GREETING: "hello" });
      const res = await json(
        await invoke("env", {
          method: "PUT",
          path: "/items/9?x=1&y=two",
          headers: { "x-test": "yes", "content-type": "application/json" },
          body: { a: 1 },
        }),
      );
      const vars = Object.fromEntries(
        (res.body.data.body as string).split("\0").filter(Boolean).map((kv) => {
          const i = kv.indexOf("=");
          return [kv.slice(0, i), kv.slice(i + 1)];
        }),
      );
      assertEquals(vars.GREETING, "hello");
      assertEquals(vars.REQUEST_METHOD, "PUT");
      assertEquals(vars.PATH_INFO, "/items/9");
      assertEquals(vars.QUERY_STRING, "x=1&y=two");
      assertEquals(vars.CONTENT_TYPE, "application/json");
      assertEquals(vars.CONTENT_LENGTH, "7");
      assertEquals(vars.HTTP_X_TEST, "yes");
      assertEquals(vars.HTTP_X_PLATFORM_PROJECT, "default");
      assertEquals(vars.HTTP_APIKEY, undefined, "reserved headers never reach the module");
      assertEquals(vars.PLATFORM_SECRET, undefined);
    });

    await t.step("a trap is a FUNCTION_ERROR naming the trap; its stderr is logged", async () => {
      await deploy("trap", "trap");
      const res = await json(await invoke("trap"));
      assertEquals(res.status, 500);
      assertEquals(res.body.error.code, "FUNCTION_ERROR");
      assertMatch(res.body.error.message, /trapped: unreachable/);
      const logs = await json(await p.fetch("/v1/functions/trap/logs", { headers: { apikey: p.secretKey } }));
      assert(logs.body.data.some((l: { message: string }) => l.message === "about to trap"));
    });

    await t.step("an infinite loop is stopped at timeout_secs: 504; other functions answer", async () => {
      await deploy("spin", "loop", { timeout_secs: 1 });
      const spinning = invoke("spin").then(json);
      const other = await json(await invoke("hello"));
      assertEquals(other.body.data.body, "hello from wasm");
      const res = await spinning;
      assertEquals(res.status, 504);
      assertEquals(res.body.error.code, "TIMEOUT");
      assertEquals((await json(await invoke("spin"))).status, 504, "and again after the worker was replaced");
    });

    await t.step("runaway memory: memory.grow is refused at memory_mb; the module sees it", async () => {
      await deploy("grow", "grow", { memory_mb: 16 });
      const res = await json(await invoke("grow"));
      assertEquals(res.status, 500);
      assertMatch(res.body.error.message, /exited with code 3/);
      const logs = await json(await p.fetch("/v1/functions/grow/logs", { headers: { apikey: p.secretKey } }));
      assert(logs.body.data.some((l: { message: string }) => l.message === "memory.grow refused"));
      assertEquals((await json(await invoke("hello"))).status, 200);
    });

    await t.step(
      "deploy refuses a module whose memory is above memory_mb, or that is not a command",
      async () => {
        const big = await deploy("big", "bigmem", { memory_mb: 32 });
        assertEquals(big.status, 400);
        assertMatch(big.body.error.message, /memory_mb/);
        const ok = await deploy("big", "bigmem", { memory_mb: 128 });
        assertEquals(ok.status, 201);
        const module = wabt.parseWat("lib.wat", `(module (memory (export "memory") 1) (func (export "f")))`);
        const lib = encodeBase64(module.toBinary({}).buffer);
        module.destroy();
        const r = await json(
          await p.fetch("/v1/functions", {
            method: "POST",
            headers: { apikey: p.secretKey },
            json: { name: "lib", runtime: "wasm", code: lib },
          }),
        );
        assertEquals(r.status, 400);
        assertMatch(r.body.error.message, /_start/);
      },
    );

    await t.step("warm calls reuse the compiled module: many calls in a row all answer", async () => {
      for (let i = 0; i < 50; i++) {
        assertEquals((await json(await invoke("hello"))).body.data.body, "hello from wasm");
      }
      const stats = await json(
        await p.fetch("/v1/functions/hello/stats", { headers: { apikey: p.secretKey } }),
      );
      assert(stats.body.data.count >= 52);
      assertEquals(stats.body.data.errors, 0);
    });
  } finally {
    await p.close();
  }
});
