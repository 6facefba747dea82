/**
 * The compatibility mounts at the HTTP level: GoTrue's error shapes by API version, and attacks on the functions
 * mount (reserved headers, the console's cookie, oversize bodies, paths that try to leave the function).
 */
import { assert, assertEquals } from "./assert.ts";
import { awayFromMinuteEnd, json, startPlatform } from "./harness.ts";
import { setUpSupabaseApp } from "./supabase_js_fixture.ts";

Deno.test("GoTrue errors: legacy shape, 2024-01-01 shape, and no internals", async () => {
  const p = await startPlatform();
  try {
    const headers = { apikey: p.publicKey, authorization: `Bearer ${p.publicKey}` };
    const signUp = (body: unknown, extra: Record<string, string> = {}) =>
      p.fetch("/auth/v1/signup", { method: "POST", headers: { ...headers, ...extra }, json: body });

    const ok = await json(
      await signUp({ email: "eve@example.com", password: "plum-orchard-42", code_challenge: null }),
    );
    assertEquals(ok.status, 200);
    assertEquals(Object.keys(ok.body).sort(), [
      "access_token",
      "expires_at",
      "expires_in",
      "refresh_token",
      "token_type",
      "user",
    ]);

    const legacy = await signUp({ email: "eve@example.com", password: "plum-orchard-42" });
    assertEquals(legacy.status, 422);
    assertEquals(legacy.headers.get("x-supabase-api-version"), null);
    assertEquals(await legacy.json(), {
      code: 422,
      error_code: "user_already_exists",
      msg: "User already registered",
    });

    const dated = await signUp({ email: "eve@example.com", password: "password" }, {
      "x-supabase-api-version": "2024-01-01",
    });
    assertEquals(dated.status, 422);
    assertEquals(dated.headers.get("x-supabase-api-version"), "2024-01-01");
    assertEquals((await dated.json()).weak_password, { reasons: ["pwned"] });

    const badJson = await p.fetch("/auth/v1/signup", {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: "{not json",
    });
    assertEquals((await json(badJson)).body, {
      code: 400,
      error_code: "bad_json",
      msg: "Could not parse request body as JSON",
    });

    const noKey = await json(await p.fetch("/auth/v1/user"));
    assertEquals([noKey.status, noKey.body.error_code], [401, "no_authorization"]);
    const anonUser = await json(await p.fetch("/auth/v1/user", { headers }));
    assertEquals([anonUser.status, anonUser.body.error_code], [401, "no_authorization"]);
    const forged = await json(
      await p.fetch("/auth/v1/user", { headers: { ...headers, authorization: "Bearer a.b.c" } }),
    );
    assertEquals([forged.status, forged.body.error_code], [403, "bad_jwt"]);
    const unknown = await json(await p.fetch("/auth/v1/admin/users", { headers }));
    assertEquals([unknown.status, unknown.body.error_code], [404, "not_found"]);
    const recover = await json(
      await p.fetch("/auth/v1/recover", { method: "POST", headers, json: { email: "eve@example.com" } }),
    );
    assertEquals([recover.status, recover.body.error_code], [422, "email_provider_disabled"]);
    const grant = await json(
      await p.fetch("/auth/v1/token?grant_type=id_token", { method: "POST", headers, json: {} }),
    );
    assertEquals([grant.status, grant.body.error_code], [400, "validation_failed"]);

    // Health, settings and the key set.
    assertEquals((await json(await p.fetch("/auth/v1/health"))).body.name, "GoTrue");
    assertEquals((await json(await p.fetch("/auth/v1/settings", { headers }))).body.external.email, true);
    const jwks = await json(await p.fetch("/auth/v1/.well-known/jwks.json"));
    assertEquals(jwks.body.keys.length, 1);
    assertEquals("d" in jwks.body.keys[0], false);

    // An oversize body is refused at the edge in GoTrue's shape.
    const huge = await json(
      await signUp({
        email: "x@example.com",
        password: "plum-orchard-42",
        data: { blob: "x".repeat(2 << 20) },
      }),
    );
    assertEquals([huge.status, huge.body.code, typeof huge.body.msg], [413, 413, "string"]);
  } finally {
    await p.close();
  }
});

Deno.test("functions mount: reserved headers, console cookie, oversize body, paths, relay errors", async () => {
  const p = await startPlatform({ INVOKE_MAX_BODY_BYTES: "4096" });
  try {
    await setUpSupabaseApp(p);
    const headers = { apikey: p.publicKey, authorization: `Bearer ${p.publicKey}` };
    const call = (path: string, init: RequestInit = {}) =>
      p.fetch(path, {
        method: "POST",
        ...init,
        headers: { ...headers, ...init.headers as Record<string, string> },
      });

    // Reserved headers never reach the function; the console's session cookie is cut (the admin it signs in
    // calls the function), other cookies go through.
    const session = await p.adminToken();
    const echoed = await json(
      await call("/functions/v1/echo/sub?x=1", {
        headers: {
          "x-platform-user": '{"sub":"forged"}',
          "x-custom": "kept",
          cookie: `theme=dark; console_session=${session}; Console_Session =cs_2`,
        },
        body: "raw",
      }),
    );
    assertEquals(echoed.status, 200);
    assertEquals(echoed.body.user, null);
    assertEquals(echoed.body.custom, "kept");
    assertEquals(echoed.body.cookie, "theme=dark");
    assertEquals([echoed.body.apikey, echoed.body.authorization], [null, null]);
    assertEquals(echoed.body.url, "http://localhost/echo/sub?x=1");

    // Without apikey: refused as invoke refuses it, as a relay error.
    const noKey = await p.fetch("/functions/v1/echo", { method: "POST" });
    assertEquals([noKey.status, noKey.headers.get("x-relay-error")], [401, "true"]);
    await noKey.body?.cancel();

    // A body over the invoke limit: 413, a relay error, the function never runs.
    const big = await call("/functions/v1/echo", { body: new Uint8Array(8192) });
    assertEquals([big.status, big.headers.get("x-relay-error")], [413, "true"]);
    assertEquals((await big.json()).error.code, "PAYLOAD_TOO_LARGE");

    // Dot segments are resolved before routing: `echo/../text` is `text`; an encoded slash names no function.
    const dots = await call("/functions/v1/echo/../text", { body: "x" });
    assertEquals(await dots.text(), "hello x");
    const encoded = await call("/functions/v1/..%2Fecho", { body: "x" });
    assertEquals([encoded.status, encoded.headers.get("x-relay-error")], [404, "true"]);
    await encoded.body?.cancel();
    const bare = await call("/functions/v1/", { body: "x" });
    assertEquals(bare.status, 404);
    await bare.body?.cancel();

    // The function's own answer goes back as is, with no relay mark.
    const teapot = await call("/functions/v1/teapot");
    assertEquals([teapot.status, teapot.headers.get("x-relay-error"), teapot.headers.get("x-why")], [
      418,
      null,
      "tea",
    ]);
    await teapot.body?.cancel();

    // A preflight on the mount allows the headers it asks for (valid names only); elsewhere the platform's list.
    const preflight = (path: string) =>
      p.fetch(path, {
        method: "OPTIONS",
        headers: {
          origin: "http://app.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "x-custom,x(bad),content-type",
        },
      });
    const allowed = (await preflight("/functions/v1/echo")).headers.get("access-control-allow-headers")!
      .split(",");
    assert(allowed.includes("x-custom") && !allowed.some((h) => h.includes("bad")), allowed.join());
    const platformAllowed = (await preflight("/v1/functions")).headers.get("access-control-allow-headers")!;
    assert(!platformAllowed.split(",").includes("x-custom"));
    // PostgREST's mount answers as PostgREST does (wai-cors): Authorization, the names asked, the simple ones.
    const rest = await preflight("/rest/v1/notes");
    assertEquals(
      [rest.status, rest.headers.get("access-control-allow-headers")],
      [200, "Authorization, x-custom, content-type, Accept, Accept-Language, Content-Language"],
    );

    // The call is invoke's: it is recorded in the function's stats.
    const stats = await json(
      await p.fetch("/v1/functions/echo/stats?window=1h", { headers: { apikey: p.secretKey } }),
    );
    assert(stats.body.data.count >= 1, JSON.stringify(stats.body));
  } finally {
    await p.close();
  }
});

Deno.test("both mounts serve the project the host selects, and never another's", async () => {
  const p = await startPlatform();
  try {
    await setUpSupabaseApp(p);
    const asAdmin = { authorization: `Bearer ${await p.adminToken()}` };
    const created = await json(
      await p.fetch("/v1/admin/projects", {
        method: "POST",
        headers: asAdmin,
        json: { ref: "demo", name: "Demo" },
      }),
    );
    const demoKey = created.body.data.public_key as string;
    const demo = { apikey: demoKey, authorization: `Bearer ${demoKey}` };

    const up = await json(
      await p.fetch("http://demo.localhost/auth/v1/signup", {
        method: "POST",
        headers: demo,
        json: { email: "demo@example.com", password: "plum-orchard-42" },
      }),
    );
    assertEquals(up.status, 200);
    const token = up.body.access_token as string;
    const own = await json(
      await p.fetch("http://demo.localhost/auth/v1/user", {
        headers: { ...demo, authorization: `Bearer ${token}` },
      }),
    );
    assertEquals(own.body.email, "demo@example.com");
    // The default project's key on demo's host, and demo's token on the default project: refused.
    const foreignKey = await json(
      await p.fetch("http://demo.localhost/auth/v1/settings", { headers: { apikey: p.publicKey } }),
    );
    assertEquals([foreignKey.status, foreignKey.body.error_code], [401, "no_authorization"]);
    const foreignToken = await json(
      await p.fetch("/auth/v1/user", { headers: { apikey: p.publicKey, authorization: `Bearer ${token}` } }),
    );
    assertEquals([foreignToken.status, foreignToken.body.error_code], [403, "bad_jwt"]);
    // The default project's function is not demo's.
    const fn = await p.fetch("http://demo.localhost/functions/v1/echo", { method: "POST", headers: demo });
    assertEquals([fn.status, fn.headers.get("x-relay-error")], [404, "true"]);
    await fn.body?.cancel();
  } finally {
    await p.close();
  }
});

Deno.test("GoTrue mount: the password-work rate limit of /v1/auth, in GoTrue's shape", async () => {
  const p = await startPlatform({ AUTH_RATE_PER_MIN: "2" });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
    const headers = { apikey: p.publicKey, authorization: `Bearer ${p.publicKey}` };
    const attempt = () =>
      p.fetch("/auth/v1/token?grant_type=password", {
        method: "POST",
        headers,
        json: { email: "nobody@example.com", password: "guess-guess-1" },
      });
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const res = await attempt();
      statuses.push(res.status);
      if (res.status === 429) {
        assert(Number(res.headers.get("retry-after")) > 0);
        assertEquals((await res.json()).error_code, "over_request_rate_limit");
      } else await res.body?.cancel();
    }
    assertEquals(statuses, [400, 400, 429]);
  } finally {
    await p.close();
  }
});
