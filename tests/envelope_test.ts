import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const UUID = /^[0-9a-f-]{36}$/;

Deno.test("envelope, request id and bad input", async (t) => {
  const p = await startPlatform({ MAX_BODY_BYTES: "4096" });
  try {
    await t.step("success: data and meta null, x-request-id set", async () => {
      const res = await p.fetch("/v1/health");
      assertEquals(res.status, 200);
      assertMatch(res.headers.get("x-request-id") ?? "", UUID);
      assertEquals(await res.json(), { data: { status: "ok" }, meta: null });
    });

    await t.step("readiness checks the database and KV", async () => {
      const { status, body } = await json(await p.fetch("/v1/ready"));
      assertEquals(status, 200);
      const { pglite, vector, ...rest } = body.data;
      assertEquals(rest, { status: "ready", database: "ok", kv: "ok" });
      // What serves semantic search (pgvector where the database has it, else the platform's HNSW index) is
      // told once the default project's database is open: a probe does not open a resting one (PGlite).
      const resting = p.platform.dbs.resting("default");
      assertEquals(resting, p.platform.dbs.kind === "pglite", "a new embedded project rests until used");
      if (resting) assertEquals(vector, undefined);
      const served = await p.platform.ai.corpus.vectorSearch(await p.platform.dbs.project("default"));
      assertEquals((await json(await p.fetch("/v1/ready"))).body.data.vector, served);
      // The embedded databases are reported on PGlite only.
      assertEquals(pglite === undefined, p.platform.dbs.kind === "postgres");
    });

    await t.step("an incoming x-request-id is kept and echoed in the error", async () => {
      const res = await p.fetch("/v1/nowhere", { headers: { "x-request-id": "trace-123" } });
      assertEquals(res.headers.get("x-request-id"), "trace-123");
      assertEquals((await res.json()).error.request_id, "trace-123");
    });

    await t.step("unknown route: JSON 404 in the envelope", async () => {
      const res = await p.fetch("/v1/nowhere", { method: "DELETE" });
      assertEquals(res.status, 404);
      const body = await res.json();
      assertEquals(Object.keys(body), ["error"]);
      assertEquals(body.error.code, "NOT_FOUND");
      assertEquals(body.error.type, "not_found");
      assertEquals(body.error.request_id, res.headers.get("x-request-id"));
      assertEquals(body.error.message, "Route DELETE /v1/nowhere does not exist");
    });

    await t.step("failure: missing key is 401 UNAUTHORIZED with the request id", async () => {
      const res = await p.fetch("/v1/project");
      const body = await res.json();
      assertEquals(res.status, 401);
      assertEquals(body.error.code, "UNAUTHORIZED");
      assertEquals(body.error.type, "unauthorized");
      assertEquals(body.error.request_id, res.headers.get("x-request-id"));
    });

    const headers = { apikey: p.publicKey };
    const badInputs: { name: string; init: RequestInit; status: number; code: string; message: RegExp }[] = [
      {
        name: "malformed JSON",
        init: { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{nope" },
        status: 400,
        code: "VALIDATION_ERROR",
        message: /Malformed JSON/,
      },
      {
        name: "wrong content type",
        init: { method: "POST", headers: { ...headers, "content-type": "text/plain" }, body: "{}" },
        status: 415,
        code: "UNSUPPORTED_MEDIA_TYPE",
        message: /application\/json/,
      },
      {
        name: "unknown field",
        init: {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ email: "u@example.com", password: "long-enough", role: "service_role" }),
        },
        status: 400,
        code: "VALIDATION_ERROR",
        message: /Unrecognized key: "role"/,
      },
      {
        name: "field errors are named",
        init: {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ email: "not-an-email", password: 12 }),
        },
        status: 400,
        code: "VALIDATION_ERROR",
        message: /email: .*password: /,
      },
      {
        name: "oversized body",
        init: {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ email: "u@example.com", password: "x".repeat(5000) }),
        },
        status: 413,
        code: "PAYLOAD_TOO_LARGE",
        message: /4096 bytes/,
      },
    ];
    for (const c of badInputs) {
      await t.step(`bad input: ${c.name} → ${c.status} ${c.code}, nothing created`, async () => {
        const { status, body } = await json(await p.fetch("/v1/auth/signup", c.init));
        assertEquals(status, c.status);
        assertEquals(body.error.code, c.code);
        assertEquals(body.error.type, "invalid_request");
        assertMatch(body.error.message, c.message);
      });
    }
    await t.step("no user was created by the bad inputs", async () => {
      const { body } = await json(
        await p.fetch("/v1/sql", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { query: "select count(*)::int as n from auth.users" },
        }),
      );
      assertEquals(body.data, [{ n: 0 }]);
    });

    await t.step("CORS preflight answers for browser clients", async () => {
      const res = await p.fetch("/v1/auth/signup", {
        method: "OPTIONS",
        headers: {
          origin: "http://app.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "apikey, content-type, authorization",
        },
      });
      assertEquals(res.status, 204);
      assertEquals(res.headers.get("access-control-allow-origin"), "*");
      assertMatch(res.headers.get("access-control-allow-headers") ?? "", /apikey/);
      await res.body?.cancel();
    });

    await t.step("CORS headers go to requests with an Origin, and only to them", async () => {
      const browser = await p.fetch("/v1/health", { headers: { origin: "http://app.example" } });
      assertEquals(browser.headers.get("access-control-allow-origin"), "*");
      assertMatch(browser.headers.get("access-control-expose-headers") ?? "", /x-request-id/);
      await browser.body?.cancel();
      const server = await p.fetch("/v1/health");
      assertEquals(server.headers.get("access-control-allow-origin"), null);
      assertMatch(server.headers.get("x-request-id") ?? "", /./);
      await server.body?.cancel();
    });

    await t.step("OpenAPI document lists every route with schemas", async () => {
      const { status, body } = await json(await p.fetch("/v1/openapi.json"));
      assertEquals(status, 200);
      assertEquals(body.openapi, "3.1.0");
      const expected = {
        "/v1/health": ["get"],
        "/v1/ready": ["get"],
        "/v1/project": ["get"],
        "/v1/sql": ["post"],
        "/v1/auth/signup": ["post"],
        "/v1/auth/token": ["post"],
        "/v1/auth/user": ["get"],
        "/v1/auth/logout": ["post"],
        "/v1/auth/.well-known/jwks.json": ["get"],
        "/v1/admin/login": ["post"],
        "/v1/admin/logout": ["post"],
        "/v1/admin/projects": ["get", "post"],
        "/v1/admin/projects/{ref}": ["get", "delete"],
        "/v1/admin/projects/{ref}/keys/rotate": ["post"],
      };
      for (const [path, methods] of Object.entries(expected)) {
        for (const m of methods) {
          const op = body.paths[path]?.[m];
          assert(op, `${m.toUpperCase()} ${path} is documented`);
          assert(op.responses["200"] ?? op.responses["201"], `${m} ${path} documents its success`);
        }
      }
      assert(body.paths["/v1/auth/signup"].post.requestBody.content["application/json"].schema);
      assert(body.components.schemas.Error);
      assert(body.components.securitySchemes.apikey);
    });

    await t.step("docs page and its assets are served locally", async () => {
      const page = await (await p.fetch("/docs")).text();
      assertMatch(page, /\/docs\/swagger-ui-bundle\.js/);
      assert(!/https?:\/\//.test(page), "the page loads nothing from another host");
      const js = await p.fetch("/docs/swagger-ui-bundle.js");
      assertEquals(js.status, 200);
      assert((await js.text()).length > 100_000);
      const init = await (await p.fetch("/docs/init.js")).text();
      assertMatch(init, /\/v1\/openapi\.json/);
    });
  } finally {
    await p.close();
  }
});
