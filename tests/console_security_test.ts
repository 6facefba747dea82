import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, awayFromMinuteEnd, startPlatform, type TestPlatform } from "./harness.ts";

const FORM = "application/x-www-form-urlencoded";
const ORIGIN = "http://127.0.0.1";

/** Signs in through the console's form; the session cookie it sets. */
async function signIn(p: TestPlatform, password = ADMIN.password): Promise<Response> {
  return await p.fetch("/console/login", {
    method: "POST",
    headers: { "content-type": FORM, origin: ORIGIN },
    body: new URLSearchParams({ email: ADMIN.email, password, next: "/console/functions" }),
    redirect: "manual",
  });
}

function cookieOf(res: Response): string {
  const set = res.headers.get("set-cookie") ?? "";
  return set.split(";")[0]!;
}

Deno.test("console: without a session every page is the sign-in form, every API 401, no key in sight", async () => {
  const p = await startPlatform();
  try {
    const root = await p.fetch("/", { redirect: "manual" });
    assertEquals([root.status, root.headers.get("location")], [302, "/console"]);
    for (
      const path of ["/console", "/console/projects", "/console/functions", "/console/data", "/console/ai"]
    ) {
      const res = await p.fetch(path);
      const text = await res.text();
      assertEquals(res.status, 200, path);
      assertMatch(text, /<form method="post" action="\/console\/login"/);
      assert(!text.includes(p.publicKey) && !text.includes(p.secretKey), `keys leak on ${path}`);
      assert(!/pk_|sk_/.test(text), `a key-like string on ${path}`);
      const csp = res.headers.get("content-security-policy") ?? "";
      assertMatch(csp, /script-src 'self'/);
      assert(!csp.includes("unsafe-inline"), "no inline script or style");
    }
    const paths: [string, string][] = [
      ["GET", "/console/api/default/v1/functions"],
      ["POST", "/console/api/default/v1/sql"],
      ["GET", "/console/api/default/rest/v1/anything"],
      ["POST", "/console/api/default/v1/functions/hello/invoke"],
      ["GET", "/v1/admin/projects"],
    ];
    for (const [method, path] of paths) {
      const res = await p.fetch(path, { method, json: method === "POST" ? {} : undefined });
      assertEquals(res.status, 401, `${method} ${path}`);
      await res.body?.cancel();
    }
    // A project key does not open the console API: only the session does.
    const keyed = await p.fetch("/console/api/default/v1/functions", { headers: { apikey: p.secretKey } });
    assertEquals(keyed.status, 401);
    await keyed.body?.cancel();
  } finally {
    await p.close();
  }
});

Deno.test("console: a wrong password keeps the form and says so; the right one sets a strict cookie", async () => {
  const p = await startPlatform();
  try {
    const wrong = await signIn(p, "not-the-password");
    const page = await wrong.text();
    assertEquals(wrong.status, 200);
    assertMatch(page, /role="alert"[^>]*>Wrong email or password/);
    assertMatch(page, new RegExp(`value="${ADMIN.email}"`));
    assertEquals(wrong.headers.get("set-cookie"), null);

    const right = await signIn(p);
    await right.body?.cancel();
    assertEquals([right.status, right.headers.get("location")], [303, "/console/functions"]);
    const set = right.headers.get("set-cookie") ?? "";
    assertMatch(set, /^console_session=cs_/);
    assertMatch(set, /HttpOnly/);
    assertMatch(set, /SameSite=Strict/);
    assert(!/Secure/.test(set), "not Secure over plain http");

    const cookie = cookieOf(right);
    const home = await p.fetch("/console/projects", { headers: { cookie } });
    const html = await home.text();
    assertMatch(html, /Sign out/);
    assertMatch(html, /<script type="module" src="\/console\/assets\/console.js"><\/script>/);
    const api = await p.fetch("/console/api/default/v1/functions", { headers: { cookie } });
    assertEquals(api.status, 200);
    await api.body?.cancel();

    // Signing out ends the session itself, not only the cookie.
    const out = await p.fetch("/console/logout", { method: "POST", headers: { cookie, origin: ORIGIN } });
    await out.body?.cancel();
    const after = await p.fetch("/console/api/default/v1/functions", { headers: { cookie } });
    assertEquals(after.status, 401);
    await after.body?.cancel();
  } finally {
    await p.close();
  }
});

Deno.test("console: over https the cookie is Secure", async () => {
  const p = await startPlatform();
  try {
    const res = await p.fetch("https://127.0.0.1/console/login", {
      method: "POST",
      headers: { "content-type": FORM, origin: "https://127.0.0.1" },
      body: new URLSearchParams({ email: ADMIN.email, password: ADMIN.password }),
      redirect: "manual",
    });
    await res.body?.cancel();
    assertMatch(res.headers.get("set-cookie") ?? "", /Secure/);
  } finally {
    await p.close();
  }
});

Deno.test("console: a cross-site POST with the session cookie is refused, wherever it is aimed", async () => {
  const p = await startPlatform();
  try {
    const cookie = cookieOf(await signIn(p));
    const attacks: [string, RequestInit & { json?: unknown }][] = [
      ["/console/api/default/v1/sql", { json: { query: "select 1" } }],
      ["/console/logout", {}],
      ["/v1/admin/projects", { json: { ref: "evil" } }],
      ["/v1/sql", { json: { query: "select 1" } }],
      ["/v1/functions/hello/invoke", { json: {} }],
    ];
    for (const origin of ["https://evil.example", "http://demo.localhost", "null"]) {
      for (const [path, init] of attacks) {
        const res = await p.fetch(path, { ...init, method: "POST", headers: { cookie, origin } });
        assertEquals(res.status, 403, `${origin} → ${path}`);
        await res.body?.cancel();
      }
    }
    const fetchSite = await p.fetch("/v1/admin/projects", {
      method: "POST",
      headers: { cookie, "sec-fetch-site": "same-site" },
      json: { ref: "evil" },
    });
    assertEquals(fetchSite.status, 403);
    await fetchSite.body?.cancel();
    // The same request from the console's own origin goes through.
    const own = await p.fetch("/console/api/default/v1/sql", {
      method: "POST",
      headers: { cookie, origin: ORIGIN },
      json: { query: "select 1 as one" },
    });
    assertEquals([own.status, (await own.json()).data], [200, [{ one: 1 }]]);
  } finally {
    await p.close();
  }
});

Deno.test("console: sign-in is rate limited like the API's, and a planted cookie is never adopted", async () => {
  const p = await startPlatform({ AUTH_RATE_PER_MIN: "3" });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
    for (let i = 0; i < 3; i++) await (await signIn(p, `wrong-${i}`)).body?.cancel();
    const limited = await signIn(p);
    const page = await limited.text();
    assertEquals(limited.status, 429);
    assertMatch(page, /Too many sign-in attempts/);
    assertMatch(limited.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
    // The API's login shares the budget.
    const api = await p.fetch("/v1/admin/login", { method: "POST", json: ADMIN });
    assertEquals(api.status, 429);
    await api.body?.cancel();
  } finally {
    await p.close();
  }
  const q = await startPlatform();
  try {
    const planted = "console_session=cs_planted-by-attacker";
    const res = await q.fetch("/console/login", {
      method: "POST",
      headers: { "content-type": FORM, origin: ORIGIN, cookie: planted },
      body: new URLSearchParams({ email: ADMIN.email, password: ADMIN.password }),
      redirect: "manual",
    });
    await res.body?.cancel();
    const issued = cookieOf(res);
    assert(issued !== planted && issued.startsWith("console_session=cs_"));
    const planted401 = await q.fetch("/console/api/default/v1/functions", { headers: { cookie: planted } });
    assertEquals(planted401.status, 401);
    await planted401.body?.cancel();
    // An open redirect through `next` is not possible.
    const away = await q.fetch("/console/login", {
      method: "POST",
      headers: { "content-type": FORM, origin: ORIGIN },
      body: new URLSearchParams({ email: ADMIN.email, password: ADMIN.password, next: "//evil.example/" }),
      redirect: "manual",
    });
    await away.body?.cancel();
    assertEquals(away.headers.get("location"), "/console");
  } finally {
    await q.close();
  }
});

Deno.test("console: markup in a project name is text on the page", async () => {
  const p = await startPlatform();
  try {
    const cookie = cookieOf(await signIn(p));
    const name = `<img src=x onerror=alert(1)>"'`;
    const created = await p.fetch("/v1/admin/projects", {
      method: "POST",
      headers: { cookie, origin: ORIGIN },
      json: { ref: "xss", name },
    });
    assertEquals(created.status, 201);
    await created.body?.cancel();
    const html = await (await p.fetch("/console/projects?project=xss", { headers: { cookie } })).text();
    assert(!html.includes("<img src=x"), "the name is escaped");
    assertMatch(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  } finally {
    await p.close();
  }
});
