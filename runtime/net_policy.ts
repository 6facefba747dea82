/**
 * Network policy of runtime hosts: the private address ranges, the operator's openings, and the Deno flags of
 * a host process. The fence is the host's egress gate (runtime/egress/), which checks every
 * address it connects to, IPv6 ranges included; the flags are a second fence for the IPv4 ranges, which Deno
 * checks against the resolved address (its deny list takes no IPv6 ranges and judges a name that resolves to
 * `::ffff:127.0.0.1` as IPv6, measured on Deno 2.9.6).
 */

/** IPv4 ranges no function reaches unless the operator opens them (FUNCTIONS_ALLOW_PRIVATE_NET). */
export const PRIVATE_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
];

/**
 * IPv6 ranges that no outbound call of the platform reaches unless allowed: unspecified, loopback and
 * IPv4-compatible (`::/96`), IPv4-mapped, IPv4-translated (SIIT, which a translator would carry to the IPv4
 * address it ends with), local-use NAT64, discard, Teredo, documentation, unique-local, link-local, site-local
 * and multicast. The egress policy (runtime/egress/policy.ts), which function hosts and the notifications guard
 * both use, judges an IPv4-mapped address as the IPv4 address it reaches instead, and also checks the IPv4
 * address inside a NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
 */
export const PRIVATE_V6_RANGES = [
  "::/96",
  "::ffff:0:0/96",
  "::ffff:0:0:0/96",
  "64:ff9b:1::/48",
  "100::/64",
  "2001::/32",
  "2001:db8::/32",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

/** The addresses of this machine's interfaces (closed to outbound calls); empty when they cannot be listed. */
export function ownAddresses(): string[] {
  try {
    return Deno.networkInterfaces().map((i) => i.address);
  } catch {
    return [];
  }
}

/**
 * IPv6 addresses the host process flags deny one by one: Deno's deny list takes no IPv6 ranges (`fc00::/7`
 * does not parse). They are a second fence only: the egress gate checks every range on the address it connects.
 */
const DENY_V6_EXACT = ["[::1]", "[::]"];

/**
 * The address of a host's egress gate (its HTTP gateway and SOCKS server). Workers may connect to it and to
 * nothing else; on Linux it is a loopback alias of its own, so the host's flags keep 127.0.0.1 closed.
 */
export const EGRESS_HOST = Deno.build.os === "linux" ? "127.31.41.59" : "127.0.0.1";

/** An `allow_net` entry: `*`, a host, `*.domain`, an IPv4 address, each with an optional port. */
export const ALLOW_NET_ENTRY =
  /^(\*|(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?)$/i;

interface Range {
  base: number;
  bits: number;
}

function parseV4(ip: string): number | null {
  const parts = ip.split(".");
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

function parseRange(text: string): Range | null {
  const [ip, bitsText] = text.split("/");
  const base = parseV4(ip ?? "");
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  if (base === null || !Number.isInteger(bits) || bits < 0 || bits > 32) return null;
  const size = 2 ** (32 - bits);
  return { base: base - (base % size), bits };
}

function formatRange(r: Range): string {
  const n = r.base;
  return `${Math.floor(n / 2 ** 24)}.${Math.floor(n / 2 ** 16) % 256}.${Math.floor(n / 256) % 256}.${
    n % 256
  }/${r.bits}`;
}

function subtract(range: Range, hole: Range): Range[] {
  const size = 2 ** (32 - range.bits);
  const holeSize = 2 ** (32 - hole.bits);
  if (hole.base + holeSize <= range.base || range.base + size <= hole.base) return [range];
  if (hole.base <= range.base && range.base + size <= hole.base + holeSize) return [];
  const half = { bits: range.bits + 1 };
  return [
    ...subtract({ base: range.base, ...half }, hole),
    ...subtract({ base: range.base + size / 2, ...half }, hole),
  ];
}

/**
 * The address or range an operator entry opens (FUNCTIONS_ALLOW_PRIVATE_NET): `10.1.2.3`, `10.1.0.0/16`,
 * `10.1.2.3:8080` (the port is ignored: the address opens), `fd00::5`, `[fd00::5]:8080`, `fd00::/64`.
 */
export function openedRange(entry: string): string {
  const e = entry.trim();
  if (e.startsWith("[")) return e.slice(1, e.indexOf("]") > 0 ? e.indexOf("]") : undefined);
  if (e.split(":").length > 2) return e; // IPv6, with or without a prefix length
  return e.replace(/:\d+$/, "");
}

/**
 * The deny list: the private ranges minus what the operator opened. `allowPrivate` holds addresses or CIDR
 * ranges (see {@linkcode openedRange}); IPv6 entries only remove the exact IPv6 denials they name.
 */
export function denyList(allowPrivate: string[], platformPorts: number[] = []): string[] {
  let ranges = PRIVATE_V4.map((r) => parseRange(r)!);
  const ports: string[] = [];
  for (const entry of allowPrivate) {
    const hole = parseRange(openedRange(entry));
    if (!hole) continue;
    ranges = ranges.flatMap((r) => subtract(r, hole));
    // An opened address still hides the platform's own ports.
    if (hole.bits === 32) {
      for (const port of platformPorts) ports.push(`${formatRange(hole).slice(0, -3)}:${port}`);
    }
  }
  for (const port of platformPorts) ports.push(`localhost:${port}`);
  const opened = new Set(allowPrivate.map(openedRange));
  const v6 = DENY_V6_EXACT.filter((a) => !opened.has(a.slice(1, -1)));
  return [...ranges.map(formatRange), ...v6, ...ports];
}

/**
 * The flags of a host process for an `allow_net` list. No list: no network at all. Otherwise the host may
 * connect anywhere but the denied ranges (its egress gate connects to addresses it checked itself, which a
 * host list could not name); the `allow_net` list is enforced by the gate, and the worker may reach only the
 * gate at {@linkcode EGRESS_HOST}, which the deny list leaves open for that reason.
 */
export function netFlags(allowNet: string[], allowPrivate: string[], platformPorts: number[] = []): string[] {
  if (allowNet.length === 0) return [];
  for (const entry of allowNet) {
    if (!ALLOW_NET_ENTRY.test(entry)) throw new Error(`Invalid allow_net entry "${entry}"`);
  }
  return ["--allow-net", `--deny-net=${denyList([...allowPrivate, EGRESS_HOST], platformPorts).join(",")}`];
}
