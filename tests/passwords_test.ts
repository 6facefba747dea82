import { loadConfig } from "../services/config.ts";
import { assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, json, startPlatform } from "./harness.ts";

Deno.test("sign-up refuses common and blank passwords with the reason, and accepts a strong one", async () => {
  const p = await startPlatform();
  const signUp = (email: string, password: string) =>
    p.fetch("/v1/auth/signup", {
      method: "POST",
      headers: { apikey: p.publicKey },
      json: { email, password },
    })
      .then(json);
  try {
    const refused: [string, RegExp][] = [
      ["12345678", /Password is too common/],
      ["password", /Password is too common/],
      ["Password1", /Password is too common/],
      ["        ", /Password must not be only whitespace/],
      ["short", /Password must be at least 8 characters/],
    ];
    for (const [password, reason] of refused) {
      const { status, body } = await signUp("weak@example.com", password);
      assertEquals([status, body.error.code], [400, "VALIDATION_ERROR"], JSON.stringify(password));
      assertMatch(body.error.message, /password/);
      assertMatch(body.error.message, reason);
    }
    const accepted = await signUp("strong@example.com", "plum-orchard-42");
    assertEquals(accepted.status, 200);
    assertEquals(accepted.body.data.user.email, "strong@example.com");
    // Signing in checks the password, not its strength: a refused password never became an account.
    const users = await p.fetch("/v1/sql", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { query: "select email from auth.users order by email" },
    }).then(json);
    assertEquals(users.body.data, [{ email: "strong@example.com" }]);
  } finally {
    await p.close();
  }
});

Deno.test("a weak ADMIN_PASSWORD stops the start with the reason; the test admin's is accepted", () => {
  for (
    const [password, reason] of [["password", /too common/], ["12345678", /too common/], [
      "        ",
      /whitespace/,
    ]]
  ) {
    let message = "";
    try {
      loadConfig({ ADMIN_EMAIL: "ops@example.com", ADMIN_PASSWORD: password as string });
    } catch (err) {
      message = (err as Error).message;
    }
    assertMatch(message, /^Invalid configuration: ADMIN_PASSWORD: /);
    assertMatch(message, reason as RegExp);
  }
  assertEquals(
    loadConfig({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password }).ADMIN_PASSWORD,
    ADMIN.password,
  );
});
