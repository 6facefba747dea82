/**
 * IP addresses and CIDR ranges as bytes, for the function egress policy: parsing (IPv4, IPv6 with an embedded
 * IPv4 tail or a zone index), range membership, and the IPv4 address an IPv6 address is routed to (mapped,
 * NAT64, 6to4), so that such an address is judged as the IPv4 it reaches.
 */

/** An address: 4 or 16 bytes. */
export interface Ip {
  family: 4 | 6;
  bytes: Uint8Array;
}

/** A range: an address and the number of leading bits that must match. */
export interface Cidr extends Ip {
  prefix: number;
}

/** Parses a dotted-quad IPv4 address (four decimal parts, nothing else). */
export function parseIpv4(text: string): Ip | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    bytes[i] = Number(p);
  }
  return { family: 4, bytes };
}

/** Parses an IPv6 address, with or without brackets; a zone index (`%eth0`) is ignored. */
export function parseIpv6(text: string): Ip | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (!/^[0-9a-f:.]+$/i.test(s) || !s.includes(":")) return null;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(s.slice(lastColon + 1));
    if (!v4) return null;
    tail = [(v4.bytes[0]! << 8) | v4.bytes[1]!, (v4.bytes[2]! << 8) | v4.bytes[3]!];
    s = s.slice(0, lastColon + 1);
    if (!s.endsWith("::")) s = s.slice(0, -1);
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string | undefined) =>
    part ? part.split(":").map((g) => /^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN) : [];
  const compressed = halves.length === 2;
  const left = compressed ? groups(halves[0]) : [...groups(halves[0]), ...tail];
  const right = compressed ? [...groups(halves[1]), ...tail] : [];
  const fill = 8 - left.length - right.length;
  if (compressed ? fill < 1 : fill !== 0) return null;
  const all = [...left, ...Array<number>(fill).fill(0), ...right];
  if (all.some((g) => Number.isNaN(g))) return null;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return { family: 6, bytes };
}

/** Parses an IPv4 or IPv6 address; null for anything else (a name). */
export function parseIp(text: string): Ip | null {
  return parseIpv4(text) ?? parseIpv6(text);
}

/** Parses `address` or `address/prefix` (IPv4 or IPv6, brackets allowed around IPv6). */
export function parseCidr(text: string): Cidr | null {
  const slash = text.lastIndexOf("/");
  const ip = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (!ip) return null;
  const max = ip.family === 4 ? 32 : 128;
  const prefixText = slash >= 0 ? text.slice(slash + 1) : String(max);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return null;
  return { ...ip, prefix: Number(prefixText) };
}

/** True when `ip` lies in `range` (same family only). */
export function inCidr(ip: Ip, range: Cidr): boolean {
  if (ip.family !== range.family) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip.bytes[i]! & mask) !== (range.bytes[i]! & mask)) return false;
  }
  return true;
}

const MAPPED = parseCidr("::ffff:0:0/96")!;
const NAT64 = parseCidr("64:ff9b::/96")!;
const SIX_TO_FOUR = parseCidr("2002::/16")!;

/**
 * The IPv4 address an IPv6 address stands for: IPv4-mapped (`::ffff:a.b.c.d`, the socket reaches that IPv4
 * host), the NAT64 well-known prefix (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`). Null otherwise.
 */
export function embeddedIpv4(ip: Ip): Ip | null {
  if (ip.family !== 6) return null;
  if (inCidr(ip, MAPPED) || inCidr(ip, NAT64)) return { family: 4, bytes: ip.bytes.slice(12, 16) };
  if (inCidr(ip, SIX_TO_FOUR)) return { family: 4, bytes: ip.bytes.slice(2, 6) };
  return null;
}

/** True for an IPv4-mapped IPv6 address: it is the IPv4 address, on an IPv6 socket. */
export function isMapped(ip: Ip): boolean {
  return ip.family === 6 && inCidr(ip, MAPPED);
}

/** Formats an address (IPv6 in full lowercase groups, without brackets). */
export function formatIp(ip: Ip): string {
  if (ip.family === 4) return [...ip.bytes].join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i]! << 8) | ip.bytes[i + 1]!).toString(16));
  return groups.join(":");
}
