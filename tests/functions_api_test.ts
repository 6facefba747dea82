import { sha256Hex } from "../lib/crypto.ts";
import { assert, assertEquals, assertMatch, assertNotMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";

const HELLO =
  `export default { fetch: (req: Request) => Response.json({ v: 1, env: Deno.env.get("GREETING") ?? null }) };`;
const HELLO_V2 =
  `export default (req: Request) => Response.json({ v: 2, env: Deno.env.get("GREETING") ?? null });`;

Deno.test("functions: storage and management routes", async (t) => {
  const p = await startPlatform();
  const service = { apikey: p.secretKey };
  const call = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    p.fetch(path, { ...init, headers: { ...service, ...init.headers as Record<string, string> } }).then(json);
  // Reads the platform's own tables: straight on the database, since the owner's SQL may not.
  const sql = (query: string, params?: unknown[]): Promise<Json[]> => p.internalSql(query, params);
  const invoke = (name: string, path = "/v1/functions") =>
    p.fetch(`${path}/${name}/invoke`, { method: "POST", headers: { apikey: p.publicKey }, json: {} }).then(
      json,
    );
  try {
    let id = "";
    await t.step("POST creates: 201, code_hash is SHA-256 of code, default permissions, active", async () => {
      const { status, body } = await call("/v1/functions", {
        method: "POST",
        json: { name: "hello", runtime: "deno", code: HELLO, env_vars: { GREETING: "hello-plaintext" } },
      });
      assertEquals(status, 201);
      const fn = body.data;
      id = fn.id;
      assertMatch(fn.id, /^[0-9a-f-]{36}$/);
      assertEquals(fn.project_id, "default");
      assertEquals(fn.name, "hello");
      assertEquals(fn.runtime, "deno");
      assertEquals(fn.code, HELLO);
      assertEquals(fn.code_hash, await sha256Hex(HELLO));
      assertEquals(fn.env_vars, { GREETING: "hello-plaintext" });
      assertEquals(fn.permissions, { allow_net: [], memory_mb: 128, timeout_secs: 30, cpu_ms: 2000 });
      assertEquals(fn.is_active, true);
      assert(!Number.isNaN(Date.parse(fn.created_at)) && !Number.isNaN(Date.parse(fn.updated_at)));
      assertEquals((await invoke("hello")).body.data.body, { v: 1, env: "hello-plaintext" });
    });

    await t.step("env_vars are encrypted at rest: the stored value is not the plaintext", async () => {
      const [row] = await sql("select env_vars from platform.functions where name = 'hello'");
      assertNotMatch(row.env_vars, /hello-plaintext|GREETING/);
      assertMatch(row.env_vars, /^v1\./);
    });

    await t.step(
      "POST on an existing name replaces the code (200) and keeps env_vars when omitted",
      async () => {
        const { status, body } = await call("/v1/functions", {
          method: "POST",
          json: { name: "hello", runtime: "deno", code: HELLO_V2 },
        });
        assertEquals(status, 200);
        assertEquals(body.data.id, id);
        assertEquals(body.data.code, HELLO_V2);
        assertEquals(body.data.code_hash, await sha256Hex(HELLO_V2));
        assertEquals(body.data.env_vars, { GREETING: "hello-plaintext" });
        assertEquals((await invoke("hello")).body.data.body, { v: 2, env: "hello-plaintext" });
        assertEquals(await sql("select count(*)::int as n from platform.functions"), [{ n: 1 }]);
      },
    );

    await t.step("POST with env_vars replaces the whole set", async () => {
      const { body } = await call("/v1/functions", {
        method: "POST",
        json: { name: "hello", runtime: "deno", code: HELLO_V2, env_vars: { OTHER: "x" } },
      });
      assertEquals(body.data.env_vars, { OTHER: "x" });
      assertEquals((await invoke("hello")).body.data.body, { v: 2, env: null });
    });

    await t.step("GET by name, and by id when no function has that name", async () => {
      const byName = await call("/v1/functions/hello");
      const byId = await call(`/v1/functions/${id}`);
      assertEquals(byName.status, 200);
      assertEquals(byId.body.data, byName.body.data);
      const missing = await call("/v1/functions/nope");
      assertEquals(missing.status, 404);
      assertEquals(missing.body.error.code, "NOT_FOUND");
      assertEquals((await call("/v1/functions/00000000-0000-0000-0000-000000000000")).status, 404);
    });

    await t.step("GET list, /code", async () => {
      const list = await call("/v1/functions");
      assertEquals(list.body.data.map((f: { name: string }) => f.name), ["hello"]);
      assertEquals((await call("/v1/functions/hello/code")).body, { data: { code: HELLO_V2 }, meta: null });
    });

    await t.step("PUT /env replaces and encrypts; GET /env decrypts, sorted by key", async () => {
      const put = await call("/v1/functions/hello/env", {
        method: "PUT",
        json: { vars: [{ key: "GREETING", value: "bonjour" }, { key: "A_KEY", value: "s3cret-value" }] },
      });
      assertEquals(put.body, { data: null, meta: null });
      const env = await call(`/v1/functions/${id}/env`);
      assertEquals(env.body.data, [{ key: "A_KEY", value: "s3cret-value" }, {
        key: "GREETING",
        value: "bonjour",
      }]);
      const [row] = await sql("select env_vars from platform.functions where id = $1", [id]);
      assertNotMatch(row.env_vars, /s3cret|bonjour/);
      assertEquals((await invoke("hello")).body.data.body, { v: 2, env: "bonjour" });
      const dup = await call("/v1/functions/hello/env", {
        method: "PUT",
        json: { vars: [{ key: "A", value: "1" }, { key: "A", value: "2" }] },
      });
      assertEquals(dup.status, 400);
      assertEquals(
        (await call("/v1/functions/hello/env")).body.data.length,
        2,
        "a refused PUT changes nothing",
      );
    });

    await t.step("PATCH merges permissions field by field", async () => {
      let r = await call("/v1/functions/hello", {
        method: "PATCH",
        json: { permissions: { memory_mb: 64 } },
      });
      assertEquals(r.body.data.permissions, { allow_net: [], memory_mb: 64, timeout_secs: 30, cpu_ms: 2000 });
      r = await call("/v1/functions/hello", {
        method: "PATCH",
        json: { permissions: { timeout_secs: 5, allow_net: ["api.example.com", "*.example.org:443"] } },
      });
      assertEquals(r.body.data.permissions, {
        allow_net: ["api.example.com", "*.example.org:443"],
        memory_mb: 64,
        timeout_secs: 5,
        cpu_ms: 2000,
      });
      r = await call("/v1/functions/hello", { method: "PATCH", json: { permissions: { cpu_ms: 500 } } });
      assertEquals(r.body.data.permissions.cpu_ms, 500);
      assertEquals(r.body.data.permissions.timeout_secs, 5, "the other fields are kept");
      assertEquals(r.body.data.env_vars, { A_KEY: "s3cret-value", GREETING: "bonjour" }, "env kept");
    });

    const outOfBounds = [
      { permissions: { memory_mb: 15 }, field: "memory_mb" },
      { permissions: { memory_mb: 1025 }, field: "memory_mb" },
      { permissions: { timeout_secs: 0 }, field: "timeout_secs" },
      { permissions: { timeout_secs: 301 }, field: "timeout_secs" },
      { permissions: { memory_mb: 64.5 }, field: "memory_mb" },
      { permissions: { cpu_ms: 9 }, field: "cpu_ms" },
      { permissions: { cpu_ms: 60_001 }, field: "cpu_ms" },
      { permissions: { cpu_ms: 100.5 }, field: "cpu_ms" },
      { permissions: { allow_net: ["http://evil.com"] }, field: "allow_net.0" },
      { permissions: { allow_net: ["a.com,--allow-all"] }, field: "allow_net.0" },
      { permissions: { cpu: 2 }, field: "permissions" },
    ];
    for (const c of outOfBounds) {
      await t.step(
        `PATCH permissions out of bounds ${JSON.stringify(c.permissions)} → 400, unchanged`,
        async () => {
          const r = await call("/v1/functions/hello", {
            method: "PATCH",
            json: { permissions: c.permissions },
          });
          assertEquals(r.status, 400);
          assertEquals(r.body.error.code, "VALIDATION_ERROR");
          assertMatch(r.body.error.message, new RegExp(c.field.replace(".", "\\.")));
          const now = await call("/v1/functions/hello");
          assertEquals(now.body.data.permissions.memory_mb, 64);
          assertEquals(now.body.data.permissions.timeout_secs, 5);
          assertEquals(now.body.data.permissions.cpu_ms, 500);
        },
      );
    }

    const badDeploys = [
      { name: "reserved jobs", json: { name: "jobs", runtime: "deno", code: HELLO }, message: /reserved/ },
      {
        name: "reserved metrics",
        json: { name: "metrics", runtime: "deno", code: HELLO },
        message: /reserved/,
      },
      { name: "bad name", json: { name: "Hello!", runtime: "deno", code: HELLO }, message: /name/ },
      {
        name: "name too long",
        json: { name: "a".repeat(64), runtime: "deno", code: HELLO },
        message: /name/,
      },
      { name: "unknown runtime", json: { name: "x", runtime: "python", code: "x" }, message: /runtime/ },
      {
        name: "code that does not parse",
        json: { name: "broken", runtime: "deno", code: "export default (req => {" },
        message: /code does not parse: .*\(\d+:\d+\)/,
      },
      {
        name: "wasm that is not base64",
        json: { name: "w", runtime: "wasm", code: "not base64!" },
        message: /base64/,
      },
      {
        name: "wasm bytes that are not a module",
        json: { name: "w", runtime: "wasm", code: btoa("hello world!") },
        message: /not valid/,
      },
      {
        name: "out-of-bounds permissions at deploy",
        json: { name: "x", runtime: "deno", code: HELLO, permissions: { memory_mb: 4096 } },
        message: /memory_mb/,
      },
    ];
    for (const c of badDeploys) {
      await t.step(`deploy refused: ${c.name} → 400, nothing stored`, async () => {
        const r = await call("/v1/functions", { method: "POST", json: c.json });
        assertEquals(r.status, 400);
        assertEquals(r.body.error.code, "VALIDATION_ERROR");
        assertMatch(r.body.error.message, c.message);
        assertEquals(await sql("select count(*)::int as n from platform.functions"), [{ n: 1 }]);
      });
    }

    await t.step("is_active false: invoke does not find it (404); true again: it runs", async () => {
      let r = await call("/v1/functions/hello", { method: "PATCH", json: { is_active: false } });
      assertEquals(r.body.data.is_active, false);
      const off = await invoke("hello");
      assertEquals(off.status, 404);
      assertEquals(off.body.error.code, "NOT_FOUND");
      assertEquals((await call("/v1/functions/hello")).status, 200, "management still sees it");
      r = await call("/v1/functions/hello", { method: "PATCH", json: { is_active: true } });
      assertEquals((await invoke("hello")).status, 200);
    });

    await t.step("PATCH code: new code and hash, parse checked", async () => {
      const r = await call("/v1/functions/hello", { method: "PATCH", json: { code: HELLO } });
      assertEquals(r.body.data.code_hash, await sha256Hex(HELLO));
      assertEquals((await invoke("hello")).body.data.body.v, 1);
      const bad = await call("/v1/functions/hello", { method: "PATCH", json: { code: "let = ;" } });
      assertEquals(bad.status, 400);
      assertEquals((await call("/v1/functions/hello/code")).body.data.code, HELLO);
    });

    await t.step("anon and authenticated get 403 naming service_role on every route but invoke", async () => {
      const signup = await json(
        await p.fetch("/v1/auth/signup", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { email: "u@example.com", password: "password-1" },
        }),
      );
      const jwt = signup.body.data.session.access_token;
      const routes: [string, string, unknown?][] = [
        ["GET", "/v1/functions"],
        ["POST", "/v1/functions", { name: "x", runtime: "deno", code: HELLO }],
        ["GET", "/v1/functions/hello"],
        ["PATCH", "/v1/functions/hello", { is_active: false }],
        ["DELETE", "/v1/functions/hello"],
        ["GET", "/v1/functions/hello/code"],
        ["GET", "/v1/functions/hello/env"],
        ["PUT", "/v1/functions/hello/env", { vars: [] }],
        ["GET", "/v1/functions/hello/logs"],
        ["GET", "/v1/functions/hello/stats"],
      ];
      const callers: Record<string, string>[] = [
        { apikey: p.publicKey },
        { apikey: p.publicKey, authorization: `Bearer ${jwt}` },
      ];
      for (const headers of callers) {
        for (const [method, path, body] of routes) {
          const r = await json(await p.fetch(path, { method, headers, json: body }));
          assertEquals(
            r.status,
            403,
            `${method} ${path} ${JSON.stringify(headers)} ${JSON.stringify(r.body)}`,
          );
          assertEquals(r.body.error.code, "FORBIDDEN");
          assertEquals(r.body.error.type, "forbidden");
          assertMatch(r.body.error.message, /service_role/);
        }
        const ok = await json(
          await p.fetch("/v1/functions/hello/invoke", { method: "POST", headers, json: {} }),
        );
        assertEquals(ok.status, 200, "invoke is open to them");
      }
      assertEquals((await call("/v1/functions/hello")).body.data.is_active, true, "nothing changed");
    });

    await t.step("admin (console session) may manage functions", async () => {
      const token = await p.adminToken();
      const r = await json(await p.fetch("/v1/functions", { headers: { authorization: `Bearer ${token}` } }));
      assertEquals(r.status, 200);
      assertEquals(r.body.data.length, 1);
    });

    await t.step("invoke: a console session needs no apikey; anyone else needs the project key", async () => {
      const token = await p.adminToken();
      const invoke = (headers: Record<string, string>) =>
        p.fetch("/v1/functions/hello/invoke", { method: "POST", headers, json: {} }).then(json);
      assertEquals((await invoke({ authorization: `Bearer ${token}` })).status, 200);
      assertEquals((await invoke({ cookie: `console_session=${token}` })).status, 200);
      const keyless = await invoke({});
      assertEquals(keyless.status, 401);
      assertMatch(keyless.body.error.message, /apikey/);
      const wrong = await invoke({ apikey: "pk_nope" });
      assertEquals(wrong.status, 401);
      assertEquals(wrong.body.error.code, "UNAUTHORIZED");
      const otherHost = await invoke({ apikey: p.publicKey, host: "nosuchproject.example.org" });
      assertEquals(otherHost.status, 404);
      assertEquals(otherHost.body.error.code, "PROJECT_NOT_FOUND");
    });

    await t.step("invoke answers carry the request id and, to a browser, CORS headers", async () => {
      const res = await p.fetch("/v1/functions/hello/invoke", {
        method: "POST",
        headers: { apikey: p.publicKey, origin: "http://app.example", "x-request-id": "trace-1" },
        json: {},
      });
      await res.body?.cancel();
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("x-request-id"), "trace-1");
      assertEquals(res.headers.get("access-control-allow-origin"), "*");
      assertEquals(res.headers.get("content-type"), "application/json");
    });

    await t.step("long form /v1/functions/{project_id}/… reaches the same routes", async () => {
      const got = await call("/v1/functions/default/hello");
      assertEquals(got.status, 200);
      assertEquals(got.body.data.id, id);
      assertEquals((await call("/v1/functions/default/hello/code")).body.data.code, HELLO);
      const inv = await invoke("hello", "/v1/functions/default");
      assertEquals(inv.status, 200);
      assertEquals(inv.body.data.body.v, 1);
      const unknown = await invoke("hello", "/v1/functions/nosuchproject");
      assertEquals(unknown.status, 404);
    });

    await t.step("long form selects another project by path, with that project's key", async () => {
      const token = await p.adminToken();
      const created = await json(
        await p.fetch("/v1/admin/projects", {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          json: { ref: "demo", name: "Demo" },
        }),
      );
      assertEquals(created.status, 201);
      const { public_key, secret_key } = created.body.data;
      const deploy = await json(
        await p.fetch("http://demo.localhost/v1/functions", {
          method: "POST",
          headers: { apikey: secret_key },
          json: { name: "hello", runtime: "deno", code: `export default () => new Response("demo")` },
        }),
      );
      assertEquals(deploy.status, 201);
      assertEquals(deploy.body.data.project_id, "demo");
      const inv = await json(
        await p.fetch("/v1/functions/demo/hello/invoke", {
          method: "POST",
          headers: { apikey: public_key },
          json: {},
        }),
      );
      assertEquals(inv.status, 200);
      assertEquals(inv.body.data.body, "demo");
      const got = await json(await p.fetch("/v1/functions/demo/hello", { headers: { apikey: secret_key } }));
      assertEquals(got.body.data.project_id, "demo");
      const foreign = await json(
        await p.fetch("/v1/functions/demo/hello", { headers: { apikey: p.secretKey } }),
      );
      assertEquals(foreign.status, 401, "a key of another project is refused");
      assertEquals((await invoke("hello")).body.data.body.v, 1, "the default project keeps its own hello");
    });

    await t.step("DELETE answers data null; the function is gone", async () => {
      const del = await call("/v1/functions/hello", { method: "DELETE" });
      assertEquals(del.status, 200);
      assertEquals(del.body, { data: null, meta: null });
      assertEquals((await call("/v1/functions/hello")).status, 404);
      assertEquals((await invoke("hello")).status, 404);
      assertEquals((await call("/v1/functions/hello", { method: "DELETE" })).status, 404);
    });

    await t.step("OpenAPI documents the function routes", async () => {
      const doc = (await call("/v1/openapi.json")).body;
      for (
        const path of [
          "/v1/functions",
          "/v1/functions/{name}",
          "/v1/functions/{name}/code",
          "/v1/functions/{name}/env",
          "/v1/functions/{name}/invoke",
          "/v1/functions/{name}/logs",
          "/v1/functions/{name}/stats",
        ]
      ) assert(doc.paths[path], path);
    });
  } finally {
    await p.close();
  }
});
