import { assert, assertEquals } from "../../tests/assert.ts";
import { EgressPolicy } from "./policy.ts";

const rules = (allowNet: string[], extra: Partial<ConstructorParameters<typeof EgressPolicy>[0]> = {}) =>
  new EgressPolicy({ allowNet, allowPrivate: [], platformPorts: [], ownAddresses: [], ...extra });

Deno.test("egress policy: allow_net names and closed addresses", async (t) => {
  await t.step("allow_net follows Deno's rules: *.d matches d and below, a port only that port", () => {
    const p = rules(["api.example.com", "*.example.org", "files.example.net:8443", "93.184.216.34"]);
    assert(p.allowsName("api.example.com", 443) && p.allowsName("API.example.com.", 80));
    assert(!p.allowsName("x.api.example.com", 443) && !p.allowsName("example.com", 443));
    assert(p.allowsName("example.org", 1) && p.allowsName("a.b.example.org", 443));
    assert(!p.allowsName("badexample.org", 443));
    assert(p.allowsName("files.example.net", 8443) && !p.allowsName("files.example.net", 443));
    assert(p.allowsName("93.184.216.34", 80) && p.allowsName("::ffff:93.184.216.34", 80));
    assert(!p.allowsName("[2606:2800::1]", 80), 'an IPv6 literal needs "*"');
    assert(rules(["*"]).allowsName("[2606:2800::1]", 80));
  });
  await t.step("loopback, private, link-local, mapped, NAT64 and 6to4 addresses of them are closed", () => {
    const p = rules(["*"]);
    for (
      const a of [
        "127.0.0.1",
        "10.1.2.3",
        "169.254.169.254",
        "0.0.0.0",
        "::1",
        "::",
        "::127.0.0.1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "fd00::2",
        "fc12::1",
        "fe80::1",
        "fe80::1%eth0",
        "fec0::1",
        "ff02::1",
        "64:ff9b::7f00:1",
        "64:ff9b::10.0.0.1",
        "64:ff9b:1::1",
        "2002:a00:1::1",
        "2001:db8::1",
        "2001:0:4136:e378::1",
      ]
    ) assert(p.addressRefusal(a, 80) !== null, a);
    for (
      const a of [
        "93.184.216.34",
        "::ffff:93.184.216.34",
        "2606:4700::1111",
        "64:ff9b::5db8:d822",
        "2002:5db8:d822::1",
      ]
    ) {
      assertEquals(p.addressRefusal(a, 80), null, a);
    }
  });
  await t.step(
    "the machine's own addresses are closed; opened ones open, but not on the platform's ports",
    () => {
      const own = rules(["*"], { ownAddresses: ["203.0.113.9", "2a01:4f8::9"] });
      assert(
        own.addressRefusal("2a01:4f8::9", 443) !== null && own.addressRefusal("2a01:4f8::10", 443) === null,
      );
      const opened = rules(["*"], {
        allowPrivate: ["::1", "10.1.0.0/16", "[fd00::5]:8080"],
        platformPorts: [8000],
      });
      assertEquals(opened.addressRefusal("::1", 9000), null);
      assertEquals(opened.addressRefusal("10.1.2.3", 9000), null);
      assertEquals(opened.addressRefusal("::ffff:10.1.2.3", 9000), null);
      assertEquals(opened.addressRefusal("fd00::5", 1), null);
      assert(opened.addressRefusal("::1", 8000) !== null, "the platform's port");
      assert(opened.addressRefusal("10.2.0.1", 9000) !== null);
    },
  );
  await t.step("check: allow_net and literal addresses without a lookup", () => {
    const p = rules(["*.example.com"]);
    assertEquals(p.check("api.example.com", 443), null);
    assert(p.check("example.net", 443)?.refused);
    assert(rules(["*"]).check("[fd00::1]", 80)?.refused);
    assertEquals(rules(["*"]).check("localhost", 80), null, "a name is judged where it is resolved");
    assertEquals(rules(["*"]).check("a.example", 0)?.refused, false);
  });
  await t.step("resolve: refusals say why; a name resolving to a closed address is refused", async () => {
    const list = await rules(["example.com"]).resolve("other.example", 443);
    assert(!list.ok && list.refused && /allow_net/.test(list.message));
    const local = await rules(["*"]).resolve("localhost", 80);
    assert(!local.ok && local.refused, JSON.stringify(local));
    const literal = await rules(["*"]).resolve("[::ffff:127.0.0.1]", 5432);
    assert(!literal.ok && literal.refused);
    const mapped = await rules(["*"]).resolve("::ffff:93.184.216.34", 80);
    assertEquals(mapped, { ok: true, addresses: ["93.184.216.34"] });
    const bad = await rules(["*"]).resolve("name.invalid", 80);
    assert(!bad.ok && !bad.refused);
  });
});
