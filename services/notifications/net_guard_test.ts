import { assertRejects } from "../../tests/assert.ts";
import { NetGuard } from "./net_guard.ts";

Deno.test("NetGuard refuses private targets unless allowed", async (t) => {
  const strict = new NetGuard("");
  const blocked = [
    "127.0.0.1",
    "127.5.5.5",
    "0.0.0.0",
    "10.1.2.3",
    "172.20.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "::1",
    "[::1]",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "localhost",
    "api.localhost",
  ];
  for (const host of blocked) {
    await t.step(`blocks ${host}`, async () => {
      await assertRejects(() => strict.check(host), /private or loopback/);
    });
  }
  await t.step("public literal addresses pass", async () => {
    await strict.check("8.8.8.8");
    await strict.check("2001:4860:4860::8888");
  });
  await t.step("schemes other than http(s) are refused", async () => {
    await assertRejects(() => strict.checkUrl("file:///etc/passwd"), /scheme/);
  });
  await t.step("an allowed CIDR or host passes", async () => {
    const allowed = new NetGuard("127.0.0.0/8, internal.example");
    await allowed.check("127.0.0.1");
    await allowed.check("localhost".replace("localhost", "127.0.0.2"));
    await allowed.check("internal.example");
    await assertRejects(() => allowed.check("10.0.0.1"), /private/);
  });
});
