import { serve } from "../lib/serve.ts";
import { assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, awayFromMinuteEnd, json, rawRequest, startPlatform } from "./harness.ts";

Deno.test("password work is rate limited per client: sign-in, sign-up, admin login", async () => {
  const p = await startPlatform({ AUTH_RATE_PER_MIN: "3" });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
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

/** A platform served on a real socket, so that the limit sees the connection's address. */
async function served(env: Record<string, string>) {
  const p = await startPlatform(env);
  const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
  const send = (path: string, host: string, body: unknown, headers: Record<string, string> = {}) =>
    rawRequest(server.addr.port, {
      method: "POST",
      path,
      host,
      headers: { "content-type": "application/json", apikey: p.publicKey, ...headers },
      body: JSON.stringify(body),
    });
  return {
    p,
    send,
    async close() {
      await server.shutdown();
      await p.close();
    },
  };
}

// Hosts that all select the default project: IP literals, the base domain, its ref subdomain.
const HOSTS = ["127.0.0.1", "localhost", "default.localhost", "10.9.8.7", "[::1]", "192.0.2.44"];

Deno.test("rotating the Host header or X-Forwarded-For does not escape the sign-in limit", async () => {
  const s = await served({ AUTH_RATE_PER_MIN: "4" });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      // Another account each time too, so that only the address can be what is limited.
      const res = await s.send("/v1/auth/token", HOSTS[i]!, {
        grant_type: "password",
        email: `guess${i}@example.com`,
        password: "wrong-password",
      }, { "x-forwarded-for": `198.51.100.${i}` });
      statuses.push(res.status);
      if (res.status === 429) assertMatch(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
    }
    assertEquals(statuses, [401, 401, 401, 401, 429]);
  } finally {
    await s.close();
  }
});

Deno.test("rotating the Host header does not escape the admin login limit", async () => {
  const s = await served({ AUTH_RATE_PER_MIN: "4" });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await s.send("/v1/admin/login", HOSTS[i]!, {
        email: `root${i}@example.com`,
        password: "nope",
      });
      statuses.push(res.status);
      if (res.status === 429) {
        assertMatch(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
        assertEquals(JSON.parse(res.body).error.code, "rate_limit_exceeded");
      }
    }
    assertEquals(statuses, [401, 401, 401, 401, 429]);
  } finally {
    await s.close();
  }
});

Deno.test("behind a trusted proxy: each client has its own limit, and an account has one wherever guesses come from", async () => {
  const s = await served({ AUTH_RATE_PER_MIN: "3", TRUSTED_PROXIES: "127.0.0.1" });
  const signIn = (from: string, email: string, password: string) =>
    s.send("/v1/auth/token", "localhost", { grant_type: "password", email, password }, {
      "x-forwarded-for": from,
    });
  try {
    await awayFromMinuteEnd(); // the limit counts per UTC minute: the attempts below must fall in one
    const signup = await s.send("/v1/auth/signup", "localhost", {
      email: "ada@example.com",
      password: "plum-orchard-42",
    }, { "x-forwarded-for": "198.51.100.200" });
    assertEquals(signup.status, 200);
    // A successful sign-in does not count against the account.
    for (let i = 0; i < 4; i++) {
      assertEquals((await signIn(`198.51.100.${i + 10}`, "ada@example.com", "plum-orchard-42")).status, 200);
    }
    // Three wrong guesses from three addresses, then the account refuses a fourth from a fifth address...
    const guesses: number[] = [];
    for (let i = 0; i < 4; i++) {
      guesses.push((await signIn(`203.0.113.${i}`, "ada@example.com", "guess")).status);
    }
    assertEquals(guesses, [401, 401, 401, 429]);
    // ...while another account, from a fresh address, is still answered.
    assertEquals((await signIn("203.0.113.99", "bob@example.com", "guess")).status, 401);
    // One client through the proxy runs out of its own tokens (3 per minute), on any account.
    const client: number[] = [];
    for (let i = 0; i < 4; i++) client.push((await signIn("192.0.2.1", `x${i}@example.com`, "guess")).status);
    assertEquals(client, [401, 401, 401, 429]);
  } finally {
    await s.close();
  }
});

Deno.test("invoke's per-client limit keys on the client address: X-Forwarded-For counts only from a trusted proxy", async () => {
  for (const trusted of [false, true]) {
    const s = await served({
      INVOKE_RATE_PER_MIN: "3",
      ...(trusted ? { TRUSTED_PROXIES: "127.0.0.1" } : {}),
    });
    try {
      const deployed = await s.p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: s.p.secretKey },
        json: { name: "hi", runtime: "deno", code: "export default () => new Response('hi')" },
      });
      assertEquals(deployed.status, 201, await deployed.text());
      await awayFromMinuteEnd(); // the limit counts per UTC minute: the calls below must fall in one
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await s.send("/v1/functions/hi/invoke", HOSTS[i]!, {}, {
          "x-forwarded-for": `198.51.100.${i}`,
        });
        statuses.push(res.status);
      }
      // Untrusted, the rotating header is ignored: one client, limited at its fourth call. Trusted, four clients.
      assertEquals(statuses, trusted ? [200, 200, 200, 200] : [200, 200, 200, 429]);
    } finally {
      await s.close();
    }
  }
});
