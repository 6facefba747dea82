// Functions that import npm packages: resolved and bundled at deploy, served from the stored bundle, held to
// their permissions. Reaches the npm registry (as CI may); the package cache is shared by the tests of a run.
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform, type TestPlatform } from "./harness.ts";

/** One package cache for every test here (and every run): the tests measure behaviour, not downloads. */
const CACHE_DIR = join(Deno.env.get("TMPDIR") ?? "/tmp", "platform-test-packages");

/** A router framework and a validator, with routing inside the function; versions pinned and ranged. */
const ROUTED = `
import { Hono } from "npm:hono@4.6.0";
import { z } from "npm:zod@^3.23";
const app = new Hono();
const Greeting = z.object({ name: z.string().min(1) });
app.get("/ping", (c) => c.json({ pong: true }));
app.post("/greet", async (c) => {
  const parsed = Greeting.safeParse(await c.req.json());
  if (!parsed.success) return c.json({ error: parsed.error.issues[0].path.join(".") }, 400);
  return c.json({ hello: parsed.data.name });
});
export default app;
`;

const PLAIN = `export default () => new Response("plain v1");`;

function env(extra: Record<string, string> = {}) {
  return { FUNCTIONS_PACKAGE_CACHE_DIR: CACHE_DIR, ...extra };
}

function client(p: TestPlatform) {
  const deploy = (body: Record<string, unknown>) =>
    p.fetch("/v1/functions", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { runtime: "deno", ...body },
    })
      .then(json);
  const invoke = (name: string, body: Record<string, unknown> = {}) =>
    p.fetch(`/v1/functions/${name}/invoke`, { method: "POST", headers: { apikey: p.secretKey }, json: body })
      .then(json);
  return { deploy, invoke };
}

Deno.test("functions npm: two packages, routing inside, pinned and ranged, errors at deploy", async (t) => {
  const p = await startPlatform(env());
  const { deploy, invoke } = client(p);
  try {
    await t.step(
      "deploy bundles hono and zod; the function object records the resolved versions",
      async () => {
        const { status, body } = await deploy({ name: "routed", code: ROUTED });
        assertEquals(status, 201, JSON.stringify(body));
        const fn = body.data;
        assertEquals(fn.code, ROUTED);
        assertMatch(fn.bundle_hash, /^[0-9a-f]{64}$/);
        assertEquals(fn.dependencies["npm:hono@4.6.0"], "4.6.0");
        const zod = Object.entries(fn.dependencies).find(([k]) => k.startsWith("npm:zod@"));
        assert(zod, JSON.stringify(fn.dependencies));
        assertMatch(zod[1] as string, /^3\.(2[3-9]|[3-9]\d)\.\d+$/);
      },
    );

    await t.step("invoke routes inside the function and validates with zod", async () => {
      const ping = await invoke("routed", { method: "GET", path: "/ping" });
      assertEquals(ping.status, 200, JSON.stringify(ping.body));
      assertEquals(ping.body.data.status, 200);
      assertEquals(ping.body.data.body, { pong: true });
      const ok = await invoke("routed", { path: "/greet", body: { name: "Ada" } });
      assertEquals(ok.body.data.body, { hello: "Ada" });
      const bad = await invoke("routed", { path: "/greet", body: { name: "" } });
      assertEquals(bad.body.data.status, 400);
      assertEquals(bad.body.data.body, { error: "name" });
      const missing = await invoke("routed", { method: "GET", path: "/nope" });
      assertEquals(missing.body.data.status, 404);
    });

    await t.step("the stored bundle carries no path of the build machine", async () => {
      const [row] = await p.internalSql(
        "select b.code from platform.function_bundles b join platform.functions f on f.bundle_hash = b.hash",
      );
      const code = String(row!.code);
      assert(!code.includes(CACHE_DIR) && !code.includes("/tmp/") && !code.includes(p.config.DATA_DIR));
    });

    await t.step("redeploying the same code does not rebuild", async () => {
      const before = (await p.fetch("/v1/functions/routed", { headers: { apikey: p.secretKey } }).then(json))
        .body.data;
      // A build leaves its work directory under the cache: none is made when nothing is built.
      const started = performance.now();
      const { status, body } = await deploy({ name: "routed", code: ROUTED });
      assertEquals(status, 200);
      assertEquals(body.data.bundle_hash, before.bundle_hash);
      assertEquals(body.data.dependencies, before.dependencies);
      assert(performance.now() - started < 1000, "a redeploy of the same code took a build's time");
    });

    const failures: [string, string, RegExp][] = [
      [
        "unknown package",
        `import x from "npm:no-such-package-zz9-platform@1"; export default () => new Response(String(x));`,
        /import "npm:no-such-package-zz9-platform@1": package "no-such-package-zz9-platform" does not exist/,
      ],
      [
        "unknown version",
        `import { z } from "npm:zod@99.0.0"; export default () => new Response(String(z));`,
        /import "npm:zod@99\.0\.0": no published version of "zod" matches "99\.0\.0"/,
      ],
      [
        "relative import",
        `import x from "./other.ts"; export default x;`,
        /import "\.\/other\.ts" names a file/,
      ],
      ["bare name", `import { z } from "zod"; export default z;`, /write "npm:zod"/],
      [
        "install scripts",
        `import x from "npm:bufferutil@4.0.8"; export default () => new Response(String(x));`,
        /needs install scripts/,
      ],
    ];
    for (const [what, code, message] of failures) {
      await t.step(`${what}: 400 at deploy naming the import; the old version keeps serving`, async () => {
        await deploy({ name: "keeper", code: PLAIN });
        const { status, body } = await deploy({ name: "keeper", code });
        assertEquals(status, 400, JSON.stringify(body));
        assertEquals(body.error.code, "VALIDATION_ERROR");
        assertMatch(body.error.message, message);
        assert(!body.error.message.includes(CACHE_DIR), body.error.message);
        const fn =
          (await p.fetch("/v1/functions/keeper", { headers: { apikey: p.secretKey } }).then(json)).body
            .data;
        assertEquals(fn.code, PLAIN);
        assertEquals((await invoke("keeper")).body.data.body, "plain v1");
        // PATCH with the same code fails the same way.
        const patched = await p.fetch("/v1/functions/keeper", {
          method: "PATCH",
          headers: { apikey: p.secretKey },
          json: { code },
        }).then(json);
        assertEquals(patched.status, 400);
      });
    }

    await t.step("a new function whose import fails is not stored", async () => {
      const { status } = await deploy({ name: "never", code: failures[1]![1] });
      assertEquals(status, 400);
      const got = await p.fetch("/v1/functions/never", { headers: { apikey: p.secretKey } });
      assertEquals(got.status, 404);
      await got.body?.cancel();
    });

    await t.step("functions without package imports are not bundled", async () => {
      const { body } = await deploy({
        name: "nodeonly",
        code: `import { join } from "node:path"; export default () => new Response(join("a", "b"));`,
      });
      assertEquals(body.data.bundle_hash, null);
      assertEquals(body.data.dependencies, {});
      assertEquals((await invoke("nodeonly")).body.data.body, "a/b");
    });
  } finally {
    await p.close();
  }
});

Deno.test("functions npm: a bundle over FUNCTIONS_MAX_BUNDLE_MB is refused at deploy", async () => {
  const p = await startPlatform(env({ FUNCTIONS_MAX_BUNDLE_MB: "0.05" }));
  const { deploy, invoke } = client(p);
  try {
    await deploy({ name: "big", code: PLAIN });
    const { status, body } = await deploy({ name: "big", code: ROUTED });
    assertEquals(status, 400, JSON.stringify(body));
    assertMatch(body.error.message, /bundle is larger than/);
    assertEquals((await invoke("big")).body.data.body, "plain v1");
  } finally {
    await p.close();
  }
});

/** A package that tries the network, the file system and the environment, each through its own API. */
const NOSY = `
import dotenv from "npm:dotenv@16.4.5";
import ky from "npm:ky@1.7.2";
const attempt = async (f) => { try { return "allowed: " + String(await f()).slice(0, 40); } catch (e) { return "refused: " + e.name; } };
export default async () => Response.json({
  fs: await attempt(() => { const r = dotenv.config({ path: "/etc/hostname" }); if (r.error) throw r.error; return JSON.stringify(r.parsed); }),
  net: await attempt(() => ky.get("https://registry.npmjs.org/zod", { retry: 0, timeout: 3000 }).text()),
  loopback: await attempt(() => ky.get("http://127.0.0.1:5432/", { retry: 0, timeout: 3000 }).text()),
  env: await attempt(() => process.env.PLATFORM_SECRET ?? process.env.PATH ?? "none"),
  own: Deno.env.get("OWN") ?? null,
});
`;

Deno.test("functions npm: a package is held to the function's permissions", async () => {
  const p = await startPlatform(env());
  const { deploy, invoke } = client(p);
  try {
    const { status, body } = await deploy({ name: "nosy", code: NOSY, env_vars: { OWN: "mine" } });
    assertEquals(status, 201, JSON.stringify(body));
    const res = await invoke("nosy");
    assertEquals(res.status, 200, JSON.stringify(res.body));
    const seen = res.body.data.body;
    assertMatch(seen.fs, /^refused/, JSON.stringify(seen));
    assertMatch(seen.net, /^refused/, JSON.stringify(seen));
    assertMatch(seen.loopback, /^refused/, JSON.stringify(seen));
    assert(!String(seen.env).includes(p.config.PLATFORM_SECRET ?? "\u0000"), JSON.stringify(seen));
    assert(seen.env === "allowed: none" || seen.env.startsWith("refused"), JSON.stringify(seen));
    assertEquals(seen.own, "mine");
  } finally {
    await p.close();
  }
});

Deno.test("functions npm: a restart serves the stored bundle with the registry unreachable", async () => {
  const first = await startPlatform(env());
  let restarted: TestPlatform | null = null;
  try {
    const { status } = await client(first).deploy({ name: "routed", code: ROUTED });
    assertEquals(status, 201);
    await first.close({ keepSandbox: true });
    // A fresh, empty package cache and an unroutable registry: only the database has the bundle.
    const emptyCache = await Deno.makeTempDir({ prefix: "platform-test-nocache-" });
    restarted = await startPlatform({
      FUNCTIONS_PACKAGE_CACHE_DIR: emptyCache,
      FUNCTIONS_NPM_REGISTRY: "http://127.0.0.1:1/",
    }, { sandbox: first.sandbox });
    const res = await client(restarted).invoke("routed", { path: "/greet", body: { name: "again" } });
    assertEquals(res.body.data?.body, { hello: "again" }, JSON.stringify(res.body));
    // A new deploy needing the registry fails at deploy, with the reason.
    const other = await client(restarted).deploy({
      name: "other",
      code: `import x from "npm:left-pad@1.3.0"; export default () => new Response(x("1", 3));`,
    });
    assertEquals(other.status, 400);
    assertMatch(other.body.error.message, /not reachable/);
    await Deno.remove(emptyCache, { recursive: true }).catch(() => {});
  } finally {
    if (restarted) await restarted.close();
    else await first.sandbox.destroy();
  }
});
