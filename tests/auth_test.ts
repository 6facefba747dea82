import { SignJWT } from "jose";
import { assert, assertEquals, assertMatch, assertNotEquals } from "./assert.ts";
import { type Json, startPlatform } from "./harness.ts";

function decodeClaims(token: string): Json {
  const part = token.split(".")[1]!.replaceAll("-", "+").replaceAll("_", "/");
  return JSON.parse(atob(part + "=".repeat((4 - (part.length % 4)) % 4)));
}

Deno.test("sign-up and sessions", async (t) => {
  const p = await startPlatform();
  // Capture every log line the platform writes during the test, to check that no password or hash leaks.
  const logged: string[] = [];
  const { log: origLog, error: origError, warn: origWarn } = console;
  console.log = (...a: unknown[]) => logged.push(a.join(" "));
  console.error = (...a: unknown[]) => logged.push(a.join(" "));
  console.warn = (...a: unknown[]) => logged.push(a.join(" "));
  const responses: string[] = [];
  const call = async (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const res = await p.fetch(path, { ...init, headers: { apikey: p.publicKey, ...init.headers } });
    const text = await res.text();
    responses.push(text);
    return { status: res.status, body: JSON.parse(text) as Json };
  };
  const password = "correct-horse-battery";
  try {
    let session: Json;
    let userId = "";

    await t.step("sign-up answers 200 with the user and a session", async () => {
      const { status, body } = await call("/v1/auth/signup", {
        method: "POST",
        json: { email: "Alice@Example.com", password, data: { name: "Alice" } },
      });
      assertEquals(status, 200);
      const { user } = body.data;
      session = body.data.session;
      userId = user.id;
      assertMatch(user.id, /^[0-9a-f-]{36}$/);
      assertEquals(user.email, "alice@example.com");
      assertEquals(user.user_metadata, { name: "Alice" });
      assertEquals(Object.keys(user).sort(), ["created_at", "email", "id", "user_metadata"]);
      assertEquals(session.token_type, "bearer");
      assertEquals(session.expires_in, 3600);
      assertMatch(session.refresh_token, /^rt_/);
    });

    await t.step(
      "the access token is ES256 with the documented claims, verifiable from the JWKS",
      async () => {
        const [header] = session.access_token.split(".");
        assertEquals(JSON.parse(atob(header)).alg, "ES256");
        const claims = decodeClaims(session.access_token);
        assertEquals(claims.sub, userId);
        assertEquals(claims.role, "authenticated");
        assertEquals(claims.aud, "authenticated");
        assertEquals(claims.email, "alice@example.com");
        assertEquals(claims.ref, "default");
        assertEquals(claims.exp - claims.iat, 3600);
        const { createLocalJWKSet, jwtVerify } = await import("jose");
        const jwks = await (await p.fetch("/v1/auth/.well-known/jwks.json")).json();
        assertEquals(jwks.keys[0].kty, "EC");
        assertEquals(jwks.keys[0].d, undefined, "no private part is published");
        const { payload } = await jwtVerify(session.access_token, createLocalJWKSet(jwks));
        assertEquals(payload.sub, userId);
      },
    );

    const badSignups: [string, Json, number, string][] = [
      ["duplicate email (any case)", { email: "ALICE@example.com", password }, 409, "CONFLICT"],
      ["weak password", { email: "bob@example.com", password: "short" }, 400, "VALIDATION_ERROR"],
      ["malformed email", { email: "bob-at-example", password }, 400, "VALIDATION_ERROR"],
      ["missing password", { email: "bob@example.com" }, 400, "VALIDATION_ERROR"],
    ];
    for (const [name, body, status, code] of badSignups) {
      await t.step(`sign-up refused: ${name} → ${status}`, async () => {
        const res = await call("/v1/auth/signup", { method: "POST", json: body });
        assertEquals(res.status, status);
        assertEquals(res.body.error.code, code);
      });
    }

    await t.step(
      "password grant signs in; a wrong password and an unknown email get the same 401",
      async () => {
        const ok = await call("/v1/auth/token", {
          method: "POST",
          json: { grant_type: "password", email: "alice@example.com", password },
        });
        assertEquals(ok.status, 200);
        assertEquals(ok.body.data.user.id, userId);
        const wrong = await call("/v1/auth/token", {
          method: "POST",
          json: { grant_type: "password", email: "alice@example.com", password: "wrong-password" },
        });
        const unknown = await call("/v1/auth/token", {
          method: "POST",
          json: { grant_type: "password", email: "nobody@example.com", password },
        });
        assertEquals([wrong.status, unknown.status], [401, 401]);
        assertEquals(wrong.body.error.message, unknown.body.error.message);
      },
    );

    await t.step("GET /v1/auth/user with the access token", async () => {
      const { status, body } = await call("/v1/auth/user", {
        headers: { authorization: `Bearer ${session.access_token}` },
      });
      assertEquals(status, 200);
      assertEquals(body.data.id, userId);
    });

    await t.step("GET /v1/auth/user without a user token is 401", async () => {
      const { status, body } = await call("/v1/auth/user");
      assertEquals(status, 401);
      assertEquals(body.error.code, "UNAUTHORIZED");
    });

    let rotated: Json;
    await t.step("refresh rotates the refresh token", async () => {
      const { status, body } = await call("/v1/auth/token", {
        method: "POST",
        json: { grant_type: "refresh_token", refresh_token: session.refresh_token },
      });
      assertEquals(status, 200);
      rotated = body.data.session;
      assertNotEquals(rotated.refresh_token, session.refresh_token);
      assertEquals(
        decodeClaims(rotated.access_token).session_id,
        decodeClaims(session.access_token).session_id,
      );
    });

    await t.step("reusing a spent refresh token is rejected and revokes the session", async () => {
      const reuse = await call("/v1/auth/token", {
        method: "POST",
        json: { grant_type: "refresh_token", refresh_token: session.refresh_token },
      });
      assertEquals(reuse.status, 401);
      assertEquals(reuse.body.error.code, "INVALID_TOKEN");
      // The whole session is gone: its newest refresh token and its access token stop working too.
      const newest = await call("/v1/auth/token", {
        method: "POST",
        json: { grant_type: "refresh_token", refresh_token: rotated.refresh_token },
      });
      assertEquals(newest.status, 401);
      const user = await call("/v1/auth/user", {
        headers: { authorization: `Bearer ${rotated.access_token}` },
      });
      assertEquals(user.status, 401);
    });

    await t.step("logout ends the session: user and refresh answer 401", async () => {
      const signIn = await call("/v1/auth/token", {
        method: "POST",
        json: { grant_type: "password", email: "alice@example.com", password },
      });
      const s = signIn.body.data.session;
      const out = await call("/v1/auth/logout", {
        method: "POST",
        headers: { authorization: `Bearer ${s.access_token}` },
      });
      assertEquals(out.status, 200);
      assertEquals(out.body, { data: null, meta: null });
      const user = await call("/v1/auth/user", { headers: { authorization: `Bearer ${s.access_token}` } });
      assertEquals(user.status, 401);
      const refresh = await call("/v1/auth/token", {
        method: "POST",
        json: { grant_type: "refresh_token", refresh_token: s.refresh_token },
      });
      assertEquals(refresh.status, 401);
    });

    await t.step("logout scope=global ends every session of the user", async () => {
      const signIn = () =>
        call("/v1/auth/token", {
          method: "POST",
          json: { grant_type: "password", email: "alice@example.com", password },
        });
      const a = (await signIn()).body.data.session;
      const b = (await signIn()).body.data.session;
      await call("/v1/auth/logout?scope=global", {
        method: "POST",
        headers: { authorization: `Bearer ${a.access_token}` },
      });
      const user = await call("/v1/auth/user", { headers: { authorization: `Bearer ${b.access_token}` } });
      assertEquals(user.status, 401);
    });

    const project = await p.platform.projects.get("default");
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>, exp: number) =>
      p.platform.projects.signingKey("default").then((key) =>
        new SignJWT({
          role: "authenticated",
          email: "alice@example.com",
          ref: "default",
          session_id: crypto.randomUUID(),
          ...claims,
        })
          .setProtectedHeader({ alg: "ES256", kid: project.jwt_kid })
          .setSubject(userId).setAudience("authenticated").setIssuedAt(now - 7200).setExpirationTime(exp)
          .sign(key)
      );

    await t.step("an expired JWT is 401 INVALID_TOKEN", async () => {
      const token = await sign({}, now - 60);
      const { status, body } = await call("/v1/project", { headers: { authorization: `Bearer ${token}` } });
      assertEquals(status, 401);
      assertEquals(body.error.code, "INVALID_TOKEN");
      assertMatch(body.error.message, /expired/);
    });

    const tamperCases: [string, () => Promise<string>][] = [
      ["payload changed", async () => {
        const [h, , s] = (await sign({}, now + 600)).split(".");
        const forged = btoa(
          JSON.stringify({
            sub: userId,
            role: "service_role",
            aud: "authenticated",
            exp: now + 600,
            iat: now,
          }),
        )
          .replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
        return `${h}.${forged}.${s}`;
      }],
      ["signature changed", async () => {
        const token = await sign({}, now + 600);
        const last = token.at(-2) === "A" ? "B" : "A";
        return token.slice(0, -2) + last + token.at(-1);
      }],
      ["signed by another key", async () => {
        const { generateKeyPair } = await import("jose");
        const { privateKey } = await generateKeyPair("ES256");
        return await new SignJWT({ role: "authenticated", ref: "default", session_id: "x" })
          .setProtectedHeader({ alg: "ES256", kid: project.jwt_kid }).setSubject(userId)
          .setAudience("authenticated").setIssuedAt().setExpirationTime("1h").sign(privateKey);
      }],
      ["alg none", () => {
        const enc = (o: unknown) => btoa(JSON.stringify(o)).replaceAll("=", "");
        return Promise.resolve(
          `${enc({ alg: "none" })}.${
            enc({ sub: userId, role: "authenticated", aud: "authenticated", ref: "default", exp: now + 600 })
          }.`,
        );
      }],
      ["claims of another project", () => sign({ ref: "other" }, now + 600)],
      ["a role other than authenticated", () => sign({ role: "service_role" }, now + 600)],
    ];
    for (const [name, make] of tamperCases) {
      await t.step(`a tampered JWT (${name}) is 401 INVALID_TOKEN`, async () => {
        const { status, body } = await call("/v1/project", {
          headers: { authorization: `Bearer ${await make()}` },
        });
        assertEquals(status, 401);
        assertEquals(body.error.code, "INVALID_TOKEN");
      });
    }

    await t.step("a token verified before does not vouch for another with its signature", async () => {
      const token = await sign({}, now + 600);
      const first = await call("/v1/project", { headers: { authorization: `Bearer ${token}` } });
      assertEquals(first.status, 200);
      const [h, payload, s] = token.split(".");
      const claims = JSON.parse(atob(payload!.replaceAll("-", "+").replaceAll("_", "/")));
      const forged = btoa(JSON.stringify({ ...claims, email: "mallory@example.com" }))
        .replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
      const { status, body } = await call("/v1/project", {
        headers: { authorization: `Bearer ${h}.${forged}.${s}` },
      });
      assertEquals(status, 401);
      assertEquals(body.error.code, "INVALID_TOKEN");
    });

    await t.step("a malformed Authorization header is 401", async () => {
      for (const value of ["Basic abc", "Bearer", "Bearer not-a-token"]) {
        const { status } = await call("/v1/project", { headers: { authorization: value } });
        assertEquals(status, 401, value);
      }
    });

    await t.step(
      "credentials get the same answer when first seen and when answered from the caches",
      async () => {
        const fresh = await call("/v1/auth/signup", {
          method: "POST",
          json: { email: "cache-check@example.com", password },
        });
        const userToken = fresh.body.data.session.access_token;
        const adminToken = await p.adminToken();
        const unknownKey = `pk_${crypto.randomUUID().replaceAll("-", "")}`;
        const cases: [string, Record<string, string>, number, string][] = [
          ["user token", { apikey: p.publicKey, authorization: `Bearer ${userToken}` }, 200, "authenticated"],
          ["user token alone", { apikey: "", authorization: `Bearer ${userToken}` }, 200, "authenticated"],
          [
            "secret key as bearer",
            { apikey: "", authorization: `Bearer ${p.secretKey}` },
            200,
            "service_role",
          ],
          ["public key", { apikey: p.publicKey }, 200, "anon"],
          [
            "secret apikey, public bearer",
            {
              apikey: p.secretKey,
              authorization: `Bearer ${p.publicKey}`,
            },
            200,
            "service_role",
          ],
          ["console session", { apikey: "", authorization: `Bearer ${adminToken}` }, 200, "admin"],
          ["unknown key", { apikey: unknownKey }, 401, "UNAUTHORIZED"],
          ["not a token", { apikey: p.publicKey, authorization: "Bearer nonsense" }, 401, "INVALID_TOKEN"],
          ["unknown session", { apikey: "", authorization: "Bearer cs_unknown" }, 401, "UNAUTHORIZED"],
        ];
        for (const [name, headers, status, expected] of cases) {
          const sent = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ""));
          for (const when of ["first", "cached"]) {
            const res = await p.fetch("/v1/project", { headers: sent });
            const body = await res.json();
            assertEquals(res.status, status, `${name} (${when})`);
            assertEquals(status === 200 ? body.data.role : body.error.code, expected, `${name} (${when})`);
          }
        }
      },
    );

    await t.step("no password or hash ever appears in a response or a log line", () => {
      const all = [...responses, ...logged].join("\n");
      assert(!all.includes(password), "the password is not echoed");
      assert(!all.includes("scrypt$"), "no hash is echoed");
      assert(!all.includes("password_hash"), "no hash column is echoed");
    });
  } finally {
    console.log = origLog;
    console.error = origError;
    console.warn = origWarn;
    await p.close();
  }
});
