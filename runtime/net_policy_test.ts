import { assert, assertEquals } from "../tests/assert.ts";
import { inCidr, parseCidr, parseIp } from "../lib/ip.ts";
import { EgressPolicy } from "./egress/policy.ts";
import { ALLOW_NET_ENTRY, denyList, EGRESS_HOST, netFlags, openedRange, ownAddresses } from "./net_policy.ts";

Deno.test("net policy: flags, deny ranges and operator openings", async (t) => {
  await t.step("no allow_net: no network flag", () => {
    assertEquals(netFlags([], []), []);
  });
  await t.step(
    "any allow_net: the host may connect anywhere but the private ranges (its gate checks)",
    () => {
      for (const list of [["*"], ["api.example.com", "*.example.org:443"]]) {
        const flags = netFlags(list, []);
        assertEquals(flags[0], "--allow-net");
        for (const r of ["0.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "[::1]", "[::]"]) {
          assert(flags[1]!.includes(r), r);
        }
        // Loopback stays denied but for the gate's own address.
        const ranges = flags[1]!.slice("--deny-net=".length).split(",").map((r) => parseCidr(r)).filter((r) =>
          r
        );
        const denied = (a: string) => ranges.some((r) => inCidr(parseIp(a)!, r!));
        assert(!denied(EGRESS_HOST) && denied("127.0.0.2"));
        if (EGRESS_HOST !== "127.0.0.1") assert(denied("127.0.0.1"));
      }
    },
  );
  await t.step("operator entries: IPv4, IPv6, with a port or a prefix", () => {
    assertEquals(openedRange("10.1.2.3:8080"), "10.1.2.3");
    assertEquals(openedRange("10.1.0.0/16"), "10.1.0.0/16");
    assertEquals(openedRange("[fd00::5]:8080"), "fd00::5");
    assertEquals(openedRange("fd00::/64"), "fd00::/64");
    assertEquals(openedRange("::1"), "::1");
    assert(!denyList(["::1"]).includes("[::1]") && denyList([]).includes("[::1]"));
  });
  await t.step("entries that could inject flags are refused", () => {
    for (const bad of ["a.com,--allow-all", "http://a.com", "a b", "", "a.com:99999999", "*.*"]) {
      assert(!ALLOW_NET_ENTRY.test(bad), bad);
    }
  });
  await t.step("an opened address is cut out of its range; the platform port stays closed", () => {
    const deny = denyList(["127.0.0.1"], [8000]);
    assert(!deny.includes("127.0.0.0/8"));
    assert(deny.includes("127.0.0.0/32") && deny.includes("127.0.0.2/31") && deny.includes("127.128.0.0/9"));
    assert(!deny.some((r) => r.startsWith("127.0.0.1/")));
    assert(deny.includes("127.0.0.1:8000") && deny.includes("localhost:8000"));
    const range = denyList(["10.1.0.0/16"]);
    assert(!range.includes("10.0.0.0/8") && range.includes("10.0.0.0/16") && range.includes("10.2.0.0/15"));
  });
});

Deno.test("net policy: every IPv6 form of a loopback or private IPv4 address is closed", () => {
  const policy = new EgressPolicy({ allowNet: ["*"], allowPrivate: [], platformPorts: [], ownAddresses: [] });
  const forms = [
    "::ffff:127.0.0.1", // IPv4-mapped
    "::127.0.0.1", // IPv4-compatible
    "::ffff:0:127.0.0.1", // IPv4-translated (SIIT)
    "64:ff9b::7f00:1", // NAT64, well-known prefix
    "64:ff9b:1::a00:1", // NAT64, local-use prefix
    "2002:7f00:1::", // 6to4
    "2002:c0a8:101::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo
  ];
  for (const a of forms) assert(policy.addressRefusal(a, 80) !== null, a);
  // The same forms of a public address stay open where they are routed on the public internet.
  for (const a of ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]) {
    assertEquals(policy.addressRefusal(a, 80), null, a);
  }
});

Deno.test("net policy: the machine's own addresses are listed (its loopback among them)", () => {
  const own = ownAddresses();
  assert(own.every((a) => parseIp(a) !== null), own.join(", "));
  assert(own.includes("127.0.0.1") || own.includes("::1"), own.join(", "));
});
