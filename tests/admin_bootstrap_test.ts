import { assertEquals, assertMatch } from "./assert.ts";
import { makeSandbox, spawnPlatform } from "./harness.ts";

Deno.test("a fresh start without ADMIN_EMAIL: the generated admin@localhost signs in with the printed password", async () => {
  const sandbox = await makeSandbox();
  const { ADMIN_EMAIL: _email, ADMIN_PASSWORD: _password, ...env } = sandbox.env;
  const platform = await spawnPlatform(env);
  try {
    // The banner shows the generated admin and its password once.
    const deadline = Date.now() + 10_000;
    let printed: string | undefined;
    while (!printed && Date.now() < deadline) {
      printed = platform.output.map((line) => line.match(/^ {2}password {5}(\S+) {3}\(shown once/)?.[1]).find(
        Boolean,
      );
      if (!printed) await new Promise((r) => setTimeout(r, 50));
    }
    assertMatch(platform.output.join("\n"), /^ {2}admin {8}admin@localhost$/m);
    assertMatch(printed ?? "", /^\S{16,}$/);

    const login = await fetch(`${platform.url}/v1/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "admin@localhost", password: printed }),
    });
    const body = await login.json();
    assertEquals(login.status, 200, JSON.stringify(body));
    assertMatch(body.data.token, /^cs_/);
    const projects = await fetch(`${platform.url}/v1/admin/projects`, {
      headers: { authorization: `Bearer ${body.data.token}` },
    });
    assertEquals(projects.status, 200);
    assertEquals((await projects.json()).data.map((p: { ref: string }) => p.ref), ["default"]);
  } finally {
    await platform.stop();
    await sandbox.destroy();
  }
});
