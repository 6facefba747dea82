import { assert, assertEquals, assertRejects } from "../../tests/assert.ts";
import { BlockedTargetError, NetGuard } from "./net_guard.ts";

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
    "[::ffff:7f00:1]",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "[64:ff9b::127.0.0.1]",
    "64:ff9b::a00:1",
    "64:ff9b:1::7f00:1",
    "2002:7f00:1::",
    "2002:c0a8:101::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "::ffff:0:7f00:1",
    "localhost",
    "api.localhost",
  ];
  for (const host of blocked) {
    await t.step(`blocks ${host}`, async () => {
      await assertRejects(() => strict.check(host), /private or loopback/);
    });
  }
  await t.step("public literal addresses pass, in their IPv6 forms too", async () => {
    await strict.check("8.8.8.8");
    await strict.check("2001:4860:4860::8888");
    await strict.check("::ffff:8.8.8.8");
    await strict.check("64:ff9b::808:808");
    await strict.check("2002:808:808::1");
  });
  await t.step("schemes other than http(s) are refused", async () => {
    await assertRejects(() => strict.checkUrl("file:///etc/passwd"), /scheme/);
  });
  // A resolver of our own: names that exist only for this test.
  const names: Record<string, string[]> = {
    "internal.example": ["10.0.0.5"],
    "mixed.example": ["93.184.216.34", "192.168.1.10"],
    "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "nat64.example": ["64:ff9b::7f00:1"],
    "sixtofour.example": ["2002:7f00:1::"],
    "mapped.example": ["::ffff:10.0.0.1"],
  };
  const resolver = (name: string) => Promise.resolve(names[name] ?? []);
  await t.step("an allowed CIDR or host passes", async () => {
    const allowed = new NetGuard("127.0.0.0/8, internal.example", resolver);
    await allowed.check("127.0.0.1");
    await allowed.check("127.0.0.2");
    assertEquals(await allowed.resolve("internal.example"), ["10.0.0.5"]);
    await assertRejects(() => allowed.check("10.0.0.1"), /private/);
  });
  await t.step("a name passes only if every address it resolves to passes", async () => {
    const guard = new NetGuard("", resolver);
    assertEquals(await guard.resolve("public.example"), names["public.example"]);
    await assertRejects(() => guard.check("mixed.example"), /private or loopback/);
    await assertRejects(() => guard.check("internal.example"), /private or loopback/);
    await assertRejects(() => guard.check("nowhere.example"), /does not resolve/);
    for (const name of ["nat64.example", "sixtofour.example", "mapped.example"]) {
      assert(await guard.check(name).catch((e) => e) instanceof BlockedTargetError, name);
    }
  });
  await t.step("allowing an IPv4 range does not open its NAT64 or 6to4 forms", async () => {
    const allowed = new NetGuard("127.0.0.0/8", resolver);
    await allowed.check("::ffff:127.0.0.1"); // the same address, on an IPv6 socket
    await assertRejects(() => allowed.check("64:ff9b::7f00:1"), /127\.0\.0\.1/);
    await assertRejects(() => allowed.check("2002:7f00:1::"), /127\.0\.0\.1/);
    await assertRejects(() => allowed.check("nat64.example"), /private or loopback/);
  });
  await t.step("the machine's own addresses are refused, as for functions", async () => {
    const guard = new NetGuard("", resolver, ["93.184.216.34"]);
    await assertRejects(() => guard.check("93.184.216.34"), /address of the runtime machine/);
    await assertRejects(() => guard.check("public.example"), /address of the runtime machine/);
    await new NetGuard("", resolver, []).check("public.example");
  });
  await t.step("lookup answers node-style with the checked addresses, or the refusal", async () => {
    const guard = new NetGuard("", resolver);
    const lookup = (host: string, options: { all?: boolean; family?: number }) =>
      new Promise<unknown>((resolve, reject) =>
        guard.lookup(host, options, (err, address, family) => err ? reject(err) : resolve([address, family]))
      );
    assertEquals(await lookup("public.example", { all: true }), [[
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 },
    ], undefined]);
    assertEquals(await lookup("public.example", { family: 6 }), ["2606:2800:220:1:248:1893:25c8:1946", 6]);
    const refused = await lookup("mixed.example", { all: true }).catch((e) => e);
    assert(refused instanceof BlockedTargetError);
  });
});
