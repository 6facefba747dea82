import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, type Json, makeSandbox, rawRequest, spawnPlatform } from "./harness.ts";

async function call(
  url: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<{ status: number; body: Json }> {
  const headers = new Headers(init.headers);
  if (init.json !== undefined) headers.set("content-type", "application/json");
  const res = await fetch(url, {
    ...init,
    headers,
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("a real server: host routing, graceful shutdown, restarts keep everything", async (t) => {
  const sandbox = await makeSandbox();
  try {
    let server = await spawnPlatform(sandbox.env);
    let demo: Json;
    const password = "restart-password";

    await t.step("first start prints the banner with the URL and the default keys", () => {
      const text = server.output.join("\n");
      assertMatch(text, /Platform started: http:\/\/127\.0\.0\.1:\d+/);
      assert(text.includes(sandbox.publicKey) && text.includes(sandbox.secretKey));
    });

    await t.step("set up: a project, users in both projects", async () => {
      const admin = await call(`${server.url}/v1/admin/login`, { method: "POST", json: ADMIN });
      const created = await call(`${server.url}/v1/admin/projects`, {
        method: "POST",
        headers: { authorization: `Bearer ${admin.body.data.token}` },
        json: { ref: "demo" },
      });
      assertEquals(created.status, 201, JSON.stringify(created.body));
      demo = created.body.data;
      const su = await call(`${server.url}/v1/auth/signup`, {
        method: "POST",
        headers: { apikey: sandbox.publicKey },
        json: { email: "keep@example.com", password },
      });
      assertEquals(su.status, 200);
    });

    await t.step("the Host header selects the project over a real socket", async () => {
      const signup = await rawRequest(server.port, {
        method: "POST",
        path: "/v1/auth/signup",
        host: `demo.localhost:${server.port}`,
        headers: { apikey: demo.public_key, "content-type": "application/json" },
        body: JSON.stringify({ email: "dora@example.com", password }),
      });
      assertEquals(signup.status, 200);
      const who = await rawRequest(server.port, {
        method: "GET",
        path: "/v1/project",
        host: `demo.localhost:${server.port}`,
        headers: { apikey: demo.public_key },
      });
      assertEquals(JSON.parse(who.body).data.ref, "demo");
      const foreign = await rawRequest(server.port, {
        method: "GET",
        path: "/v1/project",
        host: `localhost:${server.port}`,
        headers: { apikey: demo.public_key },
      });
      assertEquals(foreign.status, 401);
    });

    await t.step("SIGTERM finishes the request in flight, then exits 0", async () => {
      // Sign-up hashes a password (~250 ms): the signal arrives while it runs.
      const inFlight = call(`${server.url}/v1/auth/signup`, {
        method: "POST",
        headers: { apikey: sandbox.publicKey },
        json: { email: "inflight@example.com", password },
      });
      await new Promise((r) => setTimeout(r, 60));
      const stopped = server.stop("SIGTERM");
      assertEquals((await inFlight).status, 200);
      assertEquals((await stopped).code, 0);
      assertMatch(server.output.join("\n"), /"msg":"shutting down","signal":"SIGTERM"/);
    });

    await t.step("after a restart: same keys, projects and users; sessions still refresh", async () => {
      server = await spawnPlatform(sandbox.env);
      const text = server.output.join("\n");
      assert(text.includes(sandbox.publicKey) && !text.includes("(created)"));
      for (const email of ["keep@example.com", "inflight@example.com"]) {
        const signIn = await call(`${server.url}/v1/auth/token`, {
          method: "POST",
          headers: { apikey: sandbox.publicKey },
          json: { grant_type: "password", email, password },
        });
        assertEquals(signIn.status, 200, email);
        const refreshed = await call(`${server.url}/v1/auth/token`, {
          method: "POST",
          headers: { apikey: sandbox.publicKey },
          json: { grant_type: "refresh_token", refresh_token: signIn.body.data.session.refresh_token },
        });
        assertEquals(refreshed.status, 200);
      }
      const who = await rawRequest(server.port, {
        method: "GET",
        path: "/v1/project",
        host: `demo.localhost:${server.port}`,
        headers: { apikey: demo.secret_key },
      });
      assertEquals(JSON.parse(who.body).data.role, "service_role");
    });

    await t.step("kill -9 loses nothing that was answered", async () => {
      const su = await call(`${server.url}/v1/auth/signup`, {
        method: "POST",
        headers: { apikey: sandbox.publicKey },
        json: { email: "killed@example.com", password },
      });
      assertEquals(su.status, 200);
      await server.stop("SIGKILL");
      server = await spawnPlatform(sandbox.env);
      const signIn = await call(`${server.url}/v1/auth/token`, {
        method: "POST",
        headers: { apikey: sandbox.publicKey },
        json: { grant_type: "password", email: "killed@example.com", password },
      });
      assertEquals(signIn.status, 200);
    });

    await t.step("a second platform runs beside it with its own PORT and DATA_DIR", async () => {
      const other = await makeSandbox();
      const second = await spawnPlatform(other.env);
      try {
        assert(second.port !== server.port);
        const mine = await call(`${second.url}/v1/project`, { headers: { apikey: other.publicKey } });
        assertEquals(mine.body.data.ref, "default");
        const theirs = await call(`${second.url}/v1/project`, { headers: { apikey: sandbox.publicKey } });
        assertEquals(theirs.status, 401);
      } finally {
        assertEquals((await second.stop("SIGTERM")).code, 0);
        await other.destroy();
      }
    });

    assertEquals((await server.stop("SIGTERM")).code, 0);
  } finally {
    await sandbox.destroy();
  }
});
