import { encodeBase64 } from "../lib/encoding.ts";
import { setPlan } from "../services/functions/quota.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const fixture = (name: string) => Deno.readTextFile(new URL(`./fixtures/${name}`, import.meta.url));

Deno.test("functions: invoke, handler forms, modes, failures and hostile code", async (t) => {
  const p = await startPlatform({ INVOKE_RATE_PER_MIN: "150", FUNCTIONS_TIMEOUT_MARGIN_MS: "2000" });
  const deploy = async (name: string, code: string, extra: Record<string, unknown> = {}) => {
    const r = await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "deno", code, ...extra },
      }),
    );
    assert(r.status === 201 || r.status === 200, `deploy ${name}: ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const invoke = (name: string, body: unknown = {}, headers: Record<string, string> = {}) =>
    p.fetch(`/v1/functions/${name}/invoke`, {
      method: "POST",
      headers: { apikey: p.publicKey, ...headers },
      json: body,
    });
  const fast = async (name: string) => {
    const started = performance.now();
    const r = await json(await invoke(name));
    return { ...r, ms: performance.now() - started };
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("secret"));
  try {
    await deploy("echo", await fixture("echo.ts"));
    await deploy("fn", await fixture("form_default_fn.ts"));
    await deploy("served", await fixture("form_deno_serve.ts"));
    await deploy("binary", await fixture("binary.ts"));

    await t.step("handler forms: export default {fetch}, export default fn, Deno.serve(fn)", async () => {
      const a = await json(await invoke("echo"));
      assertEquals(a.status, 200);
      assertEquals(a.body.data.status, 200);
      const b = await json(await invoke("fn"));
      assertEquals(b.body.data.body, "default function");
      assertEquals(b.body.data.headers["content-type"], "text/plain");
      const c = await json(await invoke("served"));
      assertEquals(c.body.data.status, 201);
      assertEquals(c.body.data.body, "deno serve");
    });

    await t.step("default mode: status, headers, JSON body, empty logs, duration", async () => {
      const res = await invoke("echo", {
        method: "PUT",
        path: "/items/7?q=a%20b&status=202",
        headers: { "x-custom": "1", "content-type": "application/json" },
        body: { hello: "world" },
      });
      assertEquals(res.status, 200);
      const { data, meta } = await res.json();
      assertEquals(meta, null);
      assertEquals(data.status, 202);
      assertEquals(data.headers["x-echo"], "yes");
      assertEquals(data.headers["content-type"], "application/json");
      assertEquals(data.body.method, "PUT");
      assertEquals(data.body.path, "/items/7?q=a%20b&status=202");
      assertEquals(data.body.headers["x-custom"], "1");
      assertEquals(JSON.parse(data.body.body), { hello: "world" });
      assertEquals(data.logs, []);
      assert(typeof data.duration_ms === "number" && data.duration_ms >= 0);
    });

    await t.step("defaults: POST /; text body as text/plain; GET drops the body", async () => {
      const d = (await json(await invoke("echo", { body: "plain text" }))).body.data.body;
      assertEquals(d.method, "POST");
      assertEquals(d.path, "/");
      assertEquals(d.body, "plain text");
      assertMatch(d.headers["content-type"], /^text\/plain/);
      const g = (await json(await invoke("echo", { method: "get", body: "x" }))).body.data.body;
      assertEquals(g.method, "GET");
      assertEquals(g.body, "");
    });

    await t.step("reserved headers are dropped; x-platform-* are the platform's", async () => {
      const res = await invoke("echo", {
        headers: {
          authorization: "Bearer forged",
          apikey: "forged",
          host: "evil.example",
          connection: "close",
          "transfer-encoding": "chunked",
          "x-platform-user": '{"sub":"forged"}',
          "x-platform-project": "other",
          "x-kept": "yes",
        },
      }, { "x-request-id": "req-42" });
      const h = (await res.json()).data.body.headers;
      for (const name of ["authorization", "apikey", "connection", "transfer-encoding", "x-platform-user"]) {
        assertEquals(h[name], undefined, name);
      }
      assert(h.host !== "evil.example");
      assertEquals(h["x-kept"], "yes");
      assertEquals(h["x-platform-project"], "default");
      assertEquals(h["x-platform-request-id"], "req-42");
    });

    await t.step("Bearer user JWT: the function gets the verified user in x-platform-user", async () => {
      const signup = await json(
        await p.fetch("/v1/auth/signup", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { email: "fn-user@example.com", password: "password-1" },
        }),
      );
      const { user, session } = signup.body.data;
      const res = await json(await invoke("echo", {}, { authorization: `Bearer ${session.access_token}` }));
      const claims = JSON.parse(res.body.data.body.headers["x-platform-user"]);
      assertEquals(claims.sub, user.id);
      assertEquals(claims.email, "fn-user@example.com");
      assertEquals(claims.role, "authenticated");
      // The user token alone is not enough: invoke needs the project key too.
      const noKey = await json(
        await p.fetch("/v1/functions/echo/invoke", {
          method: "POST",
          headers: { authorization: `Bearer ${session.access_token}` },
          json: {},
        }),
      );
      assertEquals([noKey.status, noKey.body.error.code], [401, "UNAUTHORIZED"]);
      const bad = await invoke("echo", {}, { authorization: "Bearer a.b.c" });
      assertEquals(bad.status, 401);
      await bad.body?.cancel();
    });

    await t.step(
      "raw mode: the function's own status, content type and bytes, plus the origin header",
      async () => {
        const res = await invoke("echo", { path: "/?status=418" }, { "x-service-invoke-mode": "raw" });
        assertEquals(res.status, 418);
        assertEquals(res.headers.get("x-service-invoke-origin"), "function");
        assertEquals(res.headers.get("content-type"), "application/json");
        assertEquals(res.headers.get("x-echo"), "yes");
        assertEquals((await res.json()).path, "/?status=418");
      },
    );

    await t.step(
      "binary body both ways: base64 in, base64 with a flag out, raw bytes in raw mode",
      async () => {
        const bytes = new Uint8Array([0, 255, 1, 254, 128, 10]);
        const res = await json(
          await invoke("binary", {
            body: encodeBase64(bytes),
            body_encoding: "base64",
            headers: { "content-type": "application/octet-stream" },
          }),
        );
        assertEquals(res.body.data.body_encoding, "base64");
        assertEquals(res.body.data.body, encodeBase64(bytes.slice().reverse()));
        const raw = await invoke("binary", { body: encodeBase64(bytes), body_encoding: "base64" }, {
          "x-service-invoke-mode": "raw",
        });
        assertEquals(raw.headers.get("content-type"), "application/octet-stream");
        assertEquals(new Uint8Array(await raw.arrayBuffer()), bytes.slice().reverse());
      },
    );

    await t.step("invoke failures: 404 unknown function, 400 bad input, 415 wrong content type", async () => {
      const missing = await json(await invoke("nope"));
      assertEquals(missing.status, 404);
      assertEquals(missing.body.error.code, "NOT_FOUND");
      for (const path of ["no-slash", "//evil.example/", "/\\evil.example/x"]) {
        const badPath = await json(await invoke("echo", { path }));
        assertEquals(badPath.status, 400, path);
      }
      const badMethod = await json(await invoke("echo", { method: "BREW" }));
      assertEquals(badMethod.status, 400);
      const unknownField = await json(await invoke("echo", { bogus: 1 }));
      assertEquals(unknownField.status, 400);
      const text = await p.fetch("/v1/functions/echo/invoke", {
        method: "POST",
        headers: { apikey: p.publicKey, "content-type": "text/plain" },
        body: "hi",
      });
      assertEquals(text.status, 415);
      await text.body?.cancel();
      const noKey = await p.fetch("/v1/functions/echo/invoke", { method: "POST", json: {} });
      assertEquals(noKey.status, 401);
      await noKey.body?.cancel();
    });

    await t.step(
      "a body above 256 KiB is 503 SERVICE_UNAVAILABLE; a body above 1 MiB too (no 413)",
      async () => {
        for (const size of [256 * 1024 + 10, 2 * 1024 * 1024]) {
          const res = await json(await invoke("echo", { body: "x".repeat(size) }));
          assertEquals(res.status, 503);
          assertEquals(res.body.error.code, "SERVICE_UNAVAILABLE");
          assertMatch(res.body.error.message, /262144 bytes/);
        }
        const under = await json(await invoke("echo", { body: "x".repeat(200 * 1024) }));
        assertEquals(under.status, 200);
        assertEquals(under.body.data.body.body.length, 200 * 1024);
      },
    );

    await t.step("a function that throws: 500 FUNCTION_ERROR with the cause; its logs are kept", async () => {
      await deploy("throws", await fixture("throws.ts"));
      const res = await json(await invoke("throws"));
      assertEquals(res.status, 500);
      assertEquals(res.body.error.code, "FUNCTION_ERROR");
      assertMatch(res.body.error.message, /TypeError: boom/);
      const logs = await json(
        await p.fetch("/v1/functions/throws/logs", { headers: { apikey: p.secretKey } }),
      );
      const messages = logs.body.data.map((l: { message: string }) => l.message);
      assert(messages.some((m: string) => m.includes("about to fail")), messages.join("\n"));
      assert(messages.some((m: string) => m.includes("boom")));
      assertEquals((await json(await invoke("fn"))).status, 200, "others unaffected");
    });

    await t.step(
      "a module that cannot load: the error names the cause but never shows the source",
      async () => {
        const secret = "SECRET_IN_SOURCE_" + crypto.randomUUID();
        await deploy(
          "unloadable",
          // A package named at run time: no bundle holds it, and a function resolves nothing when it runs.
          `const name = "npm:left-" + "pad"; const { default: pad } = await import(name); const s = "${secret}";
          export default () => new Response(pad + s);`,
        );
        const res = await json(await invoke("unloadable"));
        assertEquals(res.status, 500);
        const text = JSON.stringify(res.body);
        assert(!text.includes(btoa(`import pad`).slice(0, 8)) && !text.includes("base64,"), text);
        assert(!text.includes(secret) && !text.includes("file:///"), text);
        assertMatch(res.body.error.message, /<function>|left-pad|npm specifiers/);
      },
    );

    await t.step("infinite loop → 504 TIMEOUT; other functions still answer fast", async () => {
      await deploy("loop", await fixture("infinite_loop.ts"), { permissions: { timeout_secs: 1 } });
      const looping = invoke("loop").then(json);
      const others = await fast("fn");
      assertEquals(others.status, 200);
      assert(others.ms < 1000, `another function answered in ${others.ms} ms while a loop ran`);
      const res = await looping;
      assertEquals(res.status, 504);
      assertEquals(res.body.error.code, "TIMEOUT");
      assertEquals(res.body.error.type, "timeout");
      const again = await json(await invoke("loop"));
      assertEquals(again.status, 504, "a looping function keeps timing out, the worker is replaced");
      assertEquals((await fast("fn")).status, 200);
    });

    await t.step(
      "calls past their limit in a live worker fail alone (504); the worker keeps running",
      async () => {
        await deploy("patient", await fixture("patient.ts"), { permissions: { timeout_secs: 1 } });
        assertEquals((await json(await invoke("patient"))).body.data.body, { calls: 1 });
        // Slow calls sent apart time out apart; the worker keeps checking its deadlines, so it is kept.
        const slow = [];
        for (let i = 0; i < 3; i++) {
          slow.push(invoke("patient", { path: "/?ms=4000" }).then(json));
          await new Promise((resolve) => setTimeout(resolve, 80));
        }
        for (const r of await Promise.all(slow)) assertEquals(r.body.error?.code, "TIMEOUT");
        const after = await json(await invoke("patient"));
        assertEquals(after.status, 200);
        assertEquals(after.body.data.body, { calls: 5 }, "the same worker: no restart");
      },
    );

    await t.step(
      "heap hog → FUNCTION_OOM error; platform and other functions alive; then it restarts",
      async () => {
        await deploy("hog", await fixture("heap_hog.ts"), {
          permissions: { memory_mb: 32, timeout_secs: 20 },
        });
        const res = await json(await invoke("hog"));
        assertEquals(res.status, 500);
        assertEquals(res.body.error.code, "FUNCTION_OOM");
        assertMatch(res.body.error.message, /out of memory \(memory_mb 32\)/);
        assertEquals((await fast("fn")).status, 200);
        assertEquals((await json(await p.fetch("/v1/health"))).status, 200);
        const again = await json(await invoke("hog"));
        assertEquals(again.body.error.code, "FUNCTION_OOM", "the host is restarted after the crash");
      },
    );

    await t.step(
      "network: loopback, the database port (IPv4 and IPv6), private ranges and unlisted hosts are refused",
      async () => {
        const port = server.addr.port;
        const code = await fixture("net_probe.ts");
        await deploy("net_any", code, { permissions: { allow_net: ["*"] } });
        await deploy("net_listed", code, { permissions: { allow_net: ["example.com"] } });
        await deploy("net_none", code);
        const urls = [
          `http://127.0.0.1:${port}/`,
          `http://localhost:${port}/`,
          `http://127.0.0.2:${port}/`,
          `http://0.0.0.0:${port}/`,
          `http://[::1]:${port}/`,
          `http://[::ffff:127.0.0.1]:${port}/`,
          `http://2130706433:${port}/`,
          "http://127.0.0.1:5432/",
          "http://[::1]:5432/",
          "http://[::ffff:127.0.0.1]:5432/",
          `http://[fd00::1]:${port}/`,
          `http://[fe80::1]:${port}/`,
          `http://[64:ff9b::7f00:1]:${port}/`,
          "http://10.0.0.1/",
          "http://169.254.169.254/latest/meta-data/",
          "http://192.168.1.1/",
        ];
        const connect = [["127.0.0.1", 5432], ["127.0.0.1", port], ["::1", 5432], ["::ffff:127.0.0.1", port]];
        const any = (await json(await invoke("net_any", { body: { urls, connect } }))).body.data;
        for (const url of urls) {
          assert(!String(any.body[url]).startsWith("reached"), `${url}: ${any.body[url]}`);
        }
        for (
          const url of urls.filter((u) => !u.includes("localhost"))
        ) {
          assertEquals(any.body[url], "refused", url);
        }
        assertEquals(any.body["127.0.0.1:5432"], "refused");
        assertEquals(any.body[`127.0.0.1:${port}`], "refused");
        assertEquals(any.body["::1:5432"], "refused");
        assertEquals(any.body[`::ffff:127.0.0.1:${port}`], "refused");
        const listed =
          (await json(await invoke("net_listed", { body: { urls: ["http://example.org/"] } }))).body.data;
        assertEquals(listed.body["http://example.org/"], "refused", "a host not in allow_net");
        const none =
          (await json(await invoke("net_none", { body: { urls: ["http://example.com/"] } }))).body.data;
        assertEquals(none.body["http://example.com/"], "refused", "no allow_net: no network");
      },
    );

    await t.step("files, the platform's env, exit, subprocesses, ffi and sys are refused", async () => {
      await deploy("sandbox", await fixture("sandbox_probe.ts"), { env_vars: { OWN: "mine" } });
      const res = await json(await invoke("sandbox"));
      assertEquals(res.status, 200, JSON.stringify(res.body));
      const r = res.body.data.body;
      assertEquals(r.readTextFile, "NotCapable");
      assertEquals(r.readSecret, "NotCapable");
      assertEquals(r.writeTextFile, "NotCapable");
      assertEquals(r.envSecret, 'allowed "absent"');
      assertEquals(r.envHome, 'allowed "absent"');
      assertEquals(r.envAll, 'allowed "OWN"', "only the function's own variables");
      assertEquals(r.exit, "NotCapable");
      assertEquals(r.command, "NotCapable");
      assertEquals(r.ffi, "NotCapable");
      assertEquals(r.sys, "NotCapable");
      assert(!r.importFile.startsWith("allowed"), r.importFile);
      assert(!r.importHost.startsWith("allowed"), `the platform's runtime modules: ${r.importHost}`);
      assertEquals(r.listen, "NotCapable", "no server of its own");
      assertEquals(r.closeWorker, "NotCapable");
      assertEquals((await fast("fn")).status, 200, "the platform is fine");
    });

    await t.step("100 concurrent invokes of one function all answer", async () => {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => invoke("echo", { path: `/n/${i}` }).then(json)),
      );
      results.forEach((r, i) => {
        assertEquals(r.status, 200);
        assertEquals(r.body.data.body.path, `/n/${i}`);
      });
    });

    await t.step(
      "redeploy while calls are in flight: old calls finish on old code, new calls get new",
      async () => {
        const v1 = (await fixture("slow_version.ts")).replace("__VERSION__", "v1");
        const v2 = (await fixture("slow_version.ts")).replace("__VERSION__", "v2");
        await deploy("slow", v1);
        assertEquals((await json(await invoke("slow"))).body.data.body.version, "v1");
        const inFlight = Array.from({ length: 5 }, () => invoke("slow", { path: "/?ms=1500" }).then(json));
        await new Promise((r) => setTimeout(r, 300));
        await deploy("slow", v2);
        const fresh = await json(await invoke("slow"));
        assertEquals(fresh.body.data.body.version, "v2");
        for (const r of await Promise.all(inFlight)) {
          assertEquals(r.status, 200);
          assertEquals(r.body.data.body.version, "v1");
        }
      },
    );

    await t.step("logs and stats record invocations with their outcomes", async () => {
      const stats = await json(
        await p.fetch("/v1/functions/loop/stats?window=1h", { headers: { apikey: p.secretKey } }),
      );
      assertEquals(stats.status, 200);
      assertEquals(stats.body.data.count, 2);
      assertEquals(stats.body.data.timeouts, 2);
      assertEquals(stats.body.data.errors, 2);
      assert(stats.body.data.p50_ms >= 1000);
      const hog =
        (await json(await p.fetch("/v1/functions/hog/stats", { headers: { apikey: p.secretKey } }))).body;
      assertEquals(hog.data.oom, 2);
      const badWindow = await p.fetch("/v1/functions/loop/stats?window=2y", {
        headers: { apikey: p.secretKey },
      });
      assertEquals(badWindow.status, 400);
      await badWindow.body?.cancel();
    });

    await t.step("429 rate_limit_exceeded with Retry-After once a client's bucket is empty", async () => {
      let limited: Response | null = null;
      // A fixed window per minute: a new minute starting midway gives 150 more calls.
      for (let i = 0; i < 400 && !limited; i++) {
        const res = await invoke("fn");
        if (res.status === 429) limited = res;
        else await res.body?.cancel();
      }
      assert(limited, "the bucket ran out");
      const body = await limited.json();
      assertEquals(body.error.code, "rate_limit_exceeded");
      assertEquals(body.error.type, "rate_limit");
      assert(Number(limited.headers.get("retry-after")) >= 1);
      const other = await invoke("echo");
      assertEquals(other.status, 200, "the bucket is per function");
      await other.body?.cancel();
    });

    await t.step("403 QUOTA_EXCEEDED once the project's monthly invocations are spent", async () => {
      await setPlan(p.platform.dbs.control, "default", 1);
      await p.platform.functions.quota.flush();
      // The plan is re-read within seconds; poll until it applies.
      let res: Response | null = null;
      for (let i = 0; i < 40; i++) {
        // As another client (the secret key's role): the public key's calls of this minute may be spent.
        res = await invoke("echo", {}, { apikey: p.secretKey });
        if (res.status === 403) break;
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 250));
      }
      const body = await res!.json();
      assertEquals(res!.status, 403);
      assertEquals(body.error.code, "QUOTA_EXCEEDED");
      assertEquals(body.error.type, "quota");
    });
  } finally {
    await server.shutdown();
    await p.close();
  }
});

Deno.test("functions: a runtime with no room answers 503 SERVICE_UNAVAILABLE and changes nothing", async () => {
  const p = await startPlatform({ FUNCTIONS_MAX_HOSTS: "1" });
  const deploy = async (name: string, code: string) => {
    const r = await p.fetch("/v1/functions", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { name, runtime: "deno", code },
    });
    const text = await r.text();
    assert(r.status === 201, `deploy ${name}: ${text}`);
  };
  const invoke = (name: string) =>
    p.fetch(`/v1/functions/${name}/invoke`, { method: "POST", headers: { apikey: p.publicKey }, json: {} })
      .then(json);
  try {
    // One deploy at a time, each host settled before the next call: a deploy prewarms its host, which holds the
    // only room until it has started, and a call of another function made meanwhile was refused (now and then).
    await deploy("other", "export default () => new Response('other');");
    assertEquals((await invoke("other")).status, 200); // its host started, now idle
    // Its prewarm stops the idle host of "other"; the call below waits for that start.
    await deploy(
      "busy",
      "export default async () => { console.log('holding'); await new Promise((r) => setTimeout(r, 3000)); return new Response('done'); };",
    );
    const busy = invoke("busy"); // holds the only host for 3 s once it runs
    // Waits until the call runs in its host (a fixed pause lost the race on a loaded machine: the call had not
    // reached the runtime yet, and "other" got the host).
    const holding = async () =>
      JSON.stringify(
        (await json(await p.fetch("/v1/functions/busy/logs", { headers: { apikey: p.secretKey } }))).body,
      )
        .includes("holding");
    for (let i = 0; i < 200 && !(await holding()); i++) await new Promise((r) => setTimeout(r, 50));
    const refused = await invoke("other");
    assertEquals(refused.status, 503);
    assertEquals(refused.body.error.code, "SERVICE_UNAVAILABLE");
    assertMatch(refused.body.error.message, /whole share of the runtime \(1 hosts/);
    assertEquals((await busy).body.data.body, "done");
    const later = await invoke("other"); // the idle host makes room now
    assertEquals(later.status, 200);
    assertEquals(later.body.data.body, "other");
  } finally {
    await p.close();
  }
});
