import { assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, json, startPlatform } from "./harness.ts";

Deno.test("password work is rate limited per client: sign-in, sign-up, admin login", async () => {
  const p = await startPlatform({ AUTH_RATE_PER_MIN: "3" });
  try {
    const attempt = () =>
      p.fetch("/v1/auth/token", {
        method: "POST",
        headers: { apikey: p.publicKey },
        json: { grant_type: "password", email: "x@example.com", password: "wrong-password" },
      }).then(json);
    for (let i = 0; i < 3; i++) assertEquals((await attempt()).status, 401);
    const res = await p.fetch("/v1/auth/token", {
      method: "POST",
      headers: { apikey: p.publicKey },
      json: { grant_type: "password", email: "x@example.com", password: "wrong-password" },
    });
    assertEquals(res.status, 429);
    assertMatch(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
    const body = await res.json();
    assertEquals([body.error.code, body.error.type], ["rate_limit_exceeded", "rate_limit"]);

    const signup = await p.fetch("/v1/auth/signup", {
      method: "POST",
      headers: { apikey: p.publicKey },
      json: { email: "new@example.com", password: "long-enough" },
    }).then(json);
    assertEquals(signup.status, 429);
    const login = await p.fetch("/v1/admin/login", { method: "POST", json: ADMIN }).then(json);
    assertEquals(login.status, 429);
    // Nothing was created by the refused sign-up.
    const users = await p.fetch("/v1/sql", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { query: "select count(*)::int as n from auth.users" },
    }).then(json);
    assertEquals(users.body.data, [{ n: 0 }]);
  } finally {
    await p.close();
  }
});
