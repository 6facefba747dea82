/**
 * Network policy of runtime hosts: which Deno flags give a function the hosts of its `allow_net` and keep
 * loopback, private, link-local and reserved ranges unreachable (decisions §4). Deny entries are CIDR ranges,
 * which Deno checks against the resolved address, so a name that resolves to 127.0.0.1 is refused too.
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

/** IPv6 addresses denied one by one (Deno's deny list takes no IPv6 ranges; mapped IPv4 is checked as IPv4). */
export const PRIVATE_V6 = ["[::1]", "[::]"];

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
 * The deny list: the private ranges minus what the operator opened. `allowPrivate` holds IPv4 addresses or
 * CIDR ranges (a `host:port` entry opens its address); anything else is ignored.
 */
export function denyList(allowPrivate: string[], platformPorts: number[] = []): string[] {
  let ranges = PRIVATE_V4.map((r) => parseRange(r)!);
  const ports: string[] = [];
  for (const entry of allowPrivate) {
    const hole = parseRange(entry.replace(/:\d+$/, ""));
    if (!hole) continue;
    ranges = ranges.flatMap((r) => subtract(r, hole));
    // An opened address still hides the platform's own ports.
    if (hole.bits === 32) {
      for (const port of platformPorts) ports.push(`${formatRange(hole).slice(0, -3)}:${port}`);
    }
  }
  for (const port of platformPorts) ports.push(`localhost:${port}`);
  return [...ranges.map(formatRange), ...PRIVATE_V6, ...ports];
}

/** The host process flags and the worker's net permission for an `allow_net` list. */
export function netFlags(
  allowNet: string[],
  allowPrivate: string[],
  platformPorts: number[] = [],
): { flags: string[]; net: boolean | string[] } {
  if (allowNet.length === 0) return { flags: [], net: false };
  for (const entry of allowNet) {
    if (!ALLOW_NET_ENTRY.test(entry)) throw new Error(`Invalid allow_net entry "${entry}"`);
  }
  const deny = `--deny-net=${denyList(allowPrivate, platformPorts).join(",")}`;
  if (allowNet.includes("*")) return { flags: ["--allow-net", deny], net: true };
  return { flags: [`--allow-net=${allowNet.join(",")}`, deny], net: [...allowNet] };
}
