import { type Cidr, embeddedIpv4, formatIp, inCidr, type Ip, isMapped, parseCidr, parseIp } from "./ip.ts";

/** Parses `TRUSTED_PROXIES`: addresses or CIDR ranges, comma-separated; null when an entry is neither. */
export function parseTrustedProxies(list: string): Cidr[] | null {
  const ranges: Cidr[] = [];
  for (const entry of list.split(",").map((s) => s.trim()).filter(Boolean)) {
    const range = parseCidr(entry);
    if (!range) return null;
    ranges.push(range);
  }
  return ranges;
}

/**
 * The address a client is limited by. It is the connection's peer, which the client cannot choose; only when
 * that peer is one of the trusted proxies is `X-Forwarded-For` read, from the right (each proxy appends the
 * address it received from), skipping the trusted proxies, to the first address none of them vouches past.
 * An IPv6 client counts as its /64: one subscriber holds a whole /64 and could otherwise rotate through it.
 * "unknown" for a call without a connection (in-process).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: Cidr[],
): string {
  if (peer === undefined) return "unknown";
  // Without a forwarded address to weigh, the answer depends on the peer alone: remembered, since every
  // request of a connection (and every connection of a client) asks it again.
  if (forwardedFor === undefined || trusted.length === 0) {
    let key = peerKeys.get(peer);
    if (key === undefined) {
      key = keyOf(peer, undefined, trusted);
      if (peerKeys.size >= MAX_PEER_KEYS) peerKeys.clear();
      peerKeys.set(peer, key);
    }
    return key;
  }
  return keyOf(peer, forwardedFor, trusted);
}

/** The keys of the peers seen lately (cleared whole when full: bounded whatever the peers). */
const peerKeys = new Map<string, string>();
const MAX_PEER_KEYS = 1024;

function keyOf(peer: string, forwardedFor: string | undefined, trusted: Cidr[]): string {
  let ip = parseIp(peer);
  if (ip === null) return peer;
  if (forwardedFor !== undefined && trusted.length > 0) {
    const hops = forwardedFor.split(",").map((s) => s.trim());
    for (let i = hops.length - 1; i >= 0 && isTrusted(ip, trusted); i--) {
      const hop = parseIp(hops[i]!);
      if (hop === null) break; // a garbled entry: the last good address stands
      ip = hop;
    }
  }
  return addressKey(ip);
}

function isTrusted(ip: Ip, trusted: Cidr[]): boolean {
  const v4 = isMapped(ip) ? embeddedIpv4(ip) : null;
  return trusted.some((range) => inCidr(ip, range) || (v4 !== null && inCidr(v4, range)));
}

function addressKey(ip: Ip): string {
  if (isMapped(ip)) return formatIp(embeddedIpv4(ip)!);
  if (ip.family === 4) return formatIp(ip);
  return `${
    formatIp({ family: 6, bytes: new Uint8Array([...ip.bytes.slice(0, 8), ...new Uint8Array(8)]) })
  }/64`;
}
