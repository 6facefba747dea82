import { assertEquals } from "../tests/assert.ts";
import { clientAddress, parseTrustedProxies } from "./client_address.ts";

Deno.test("client address: the peer, unless a trusted proxy forwarded for someone", () => {
  const none = parseTrustedProxies("")!;
  const proxies = parseTrustedProxies("10.0.0.0/8, 192.168.1.7, fd00::/8")!;
  const cases: [string | undefined, string | undefined, typeof none, string][] = [
    ["203.0.113.9", undefined, none, "203.0.113.9"],
    // Without a trusted proxy, the header is the client's own words.
    ["203.0.113.9", "198.51.100.1", none, "203.0.113.9"],
    // From an untrusted peer, likewise.
    ["203.0.113.9", "198.51.100.1", proxies, "203.0.113.9"],
    // Through one trusted proxy, the address it received from.
    ["10.1.2.3", "198.51.100.1", proxies, "198.51.100.1"],
    // A client-written entry left of what the proxies appended is ignored.
    ["10.1.2.3", "1.1.1.1, 198.51.100.1, 192.168.1.7", proxies, "198.51.100.1"],
    // A garbled entry stops the walk at the last good address.
    ["10.1.2.3", "198.51.100.1, garbage", proxies, "10.1.2.3"],
    // IPv4-mapped peers are the IPv4 address; IPv6 clients count by their /64.
    ["::ffff:10.0.0.1", "198.51.100.1", proxies, "198.51.100.1"],
    ["2001:db8:1:2:aaaa::1", undefined, none, "2001:db8:1:2:0:0:0:0/64"],
    ["2001:db8:1:2:bbbb::9", undefined, none, "2001:db8:1:2:0:0:0:0/64"],
    [undefined, "198.51.100.1", proxies, "unknown"],
  ];
  for (const [peer, forwarded, trusted, expected] of cases) {
    assertEquals(clientAddress(peer, forwarded, trusted), expected, `${peer} / ${forwarded}`);
  }
  assertEquals(parseTrustedProxies("10.0.0.1, proxy.local"), null);
});

Deno.test("client address: a peer asked again, after many others, gets the same key", () => {
  const none = parseTrustedProxies("")!;
  // More peers than the remembered keys hold: each answer is still the peer's own.
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 3000; i++) {
      const peer = `10.${i >> 8 & 255}.${i & 255}.${round + 1}`;
      assertEquals(clientAddress(peer, undefined, none), peer);
    }
  }
  assertEquals(clientAddress("2001:db8:1:2:aaaa::1", undefined, none), "2001:db8:1:2:0:0:0:0/64");
  assertEquals(clientAddress("not an address", undefined, none), "not an address");
});
