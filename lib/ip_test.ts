import { assert, assertEquals } from "../tests/assert.ts";
import { embeddedIpv4, formatIp, inCidr, parseCidr, parseIp } from "./ip.ts";

Deno.test("ip: parse, format, ranges and embedded IPv4", async (t) => {
  await t.step("IPv4 and IPv6 forms parse to the same bytes as their canonical form", () => {
    const cases: [string, string][] = [
      ["127.0.0.1", "127.0.0.1"],
      ["::1", "0:0:0:0:0:0:0:1"],
      ["[::1]", "0:0:0:0:0:0:0:1"],
      ["::", "0:0:0:0:0:0:0:0"],
      ["::ffff:127.0.0.1", "0:0:0:0:0:ffff:7f00:1"],
      ["::ffff:7f00:1", "0:0:0:0:0:ffff:7f00:1"],
      ["64:ff9b::10.0.0.1", "64:ff9b:0:0:0:0:a00:1"],
      ["fe80::1%eth0", "fe80:0:0:0:0:0:0:1"],
      ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
      ["1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"],
      ["FD00::2", "fd00:0:0:0:0:0:0:2"],
    ];
    for (const [text, canonical] of cases) assertEquals(formatIp(parseIp(text)!), canonical, text);
  });
  await t.step("names and malformed addresses are not addresses", () => {
    for (
      const text of [
        "localhost",
        "1.2.3",
        "1.2.3.256",
        "2130706433",
        "1::2::3",
        ":::",
        "1:2:3:4:5:6:7:8:9",
        "g::1",
        "::1.2.3",
      ]
    ) {
      assertEquals(parseIp(text), null, text);
    }
  });
  await t.step("ranges match by prefix, per family", () => {
    assert(inCidr(parseIp("fd12:3456::1")!, parseCidr("fc00::/7")!));
    assert(!inCidr(parseIp("fe00::1")!, parseCidr("fc00::/7")!));
    assert(inCidr(parseIp("febf::1")!, parseCidr("fe80::/10")!));
    assert(inCidr(parseIp("172.31.255.255")!, parseCidr("172.16.0.0/12")!));
    assert(!inCidr(parseIp("172.32.0.0")!, parseCidr("172.16.0.0/12")!));
    assert(!inCidr(parseIp("::ffff:10.0.0.1")!, parseCidr("10.0.0.0/8")!), "families differ");
    assertEquals(parseCidr("10.0.0.0/33"), null);
    assertEquals(parseCidr("fc00::/129"), null);
  });
  await t.step("mapped, NAT64 and 6to4 addresses carry an IPv4 address", () => {
    assertEquals(formatIp(embeddedIpv4(parseIp("::ffff:192.168.1.1")!)!), "192.168.1.1");
    assertEquals(formatIp(embeddedIpv4(parseIp("64:ff9b::7f00:1")!)!), "127.0.0.1");
    assertEquals(formatIp(embeddedIpv4(parseIp("2002:a00:1::")!)!), "10.0.0.1");
    assertEquals(embeddedIpv4(parseIp("2606:4700::1111")!), null);
    assertEquals(embeddedIpv4(parseIp("10.0.0.1")!), null);
  });
});
