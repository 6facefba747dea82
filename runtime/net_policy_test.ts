import { assert, assertEquals } from "../tests/assert.ts";
import { ALLOW_NET_ENTRY, denyList, netFlags } from "./net_policy.ts";

Deno.test("net policy: flags, deny ranges and operator openings", async (t) => {
  await t.step("no allow_net: no network flag, worker net false", () => {
    assertEquals(netFlags([], []), { flags: [], net: false });
  });
  await t.step('"*": all hosts but the private ranges', () => {
    const { flags, net } = netFlags(["*"], []);
    assertEquals(net, true);
    assertEquals(flags[0], "--allow-net");
    for (const r of ["127.0.0.0/8", "0.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "[::1]", "[::]"]) {
      assert(flags[1]!.includes(r), r);
    }
  });
  await t.step("a list: exactly those hosts, still with the deny ranges", () => {
    const { flags, net } = netFlags(["api.example.com", "*.example.org:443"], []);
    assertEquals(flags[0], "--allow-net=api.example.com,*.example.org:443");
    assertEquals(net, ["api.example.com", "*.example.org:443"]);
    assert(flags[1]!.startsWith("--deny-net="));
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
