import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { PRIVATE_V4, PRIVATE_V6_RANGES } from "../../runtime/net_policy.ts";

/** A parsed CIDR range. */
interface Cidr {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
}

function ipToBigInt(ip: string): { family: 4 | 6; value: bigint } | null {
  const family = isIP(ip);
  if (family === 4) {
    const parts = ip.split(".").map(Number);
    return { family: 4, value: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) };
  }
  if (family === 6) {
    let text = ip.toLowerCase();
    const v4 = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
    if (v4) {
      const n = ipToBigInt(v4[1]!)!.value;
      text = text.slice(0, -v4[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
    }
    const [head = "", tail] = text.split("::");
    const headParts = head ? head.split(":") : [];
    const tailParts = tail !== undefined && tail !== "" ? tail.split(":") : [];
    const fill = tail !== undefined ? 8 - headParts.length - tailParts.length : 0;
    const groups = [...headParts, ...Array(fill).fill("0"), ...tailParts];
    return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
  }
  return null;
}

function parseCidr(text: string): Cidr | null {
  const [addr = "", len] = text.split("/");
  const ip = ipToBigInt(addr);
  if (!ip) return null;
  const max = ip.family === 4 ? 32 : 128;
  const prefix = len === undefined ? max : Number(len);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { family: ip.family, bits: ip.value, prefix };
}

function inCidr(ip: { family: 4 | 6; value: bigint }, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  const max = cidr.family === 4 ? 32n : 128n;
  const shift = max - BigInt(cidr.prefix);
  return (ip.value >> shift) === (cidr.bits >> shift);
}

/** Ranges that are never reachable unless allowed: the same list as function hosts deny (runtime/net_policy.ts). */
const BLOCKED = [...PRIVATE_V4, ...PRIVATE_V6_RANGES].map((c) => parseCidr(c)!);

/** Why a target was refused. */
export class BlockedTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BlockedTargetError";
  }
}

/** Resolves a name to its addresses (the system resolver by default; tests pass their own). */
export type Resolver = (name: string) => Promise<string[]>;

/** getaddrinfo, as a connection would resolve the name (it honours /etc/hosts). */
const systemResolver: Resolver = async (name) =>
  (await dnsLookup(name, { all: true, verbatim: true })).map((a) => a.address);

/** The callback of a node-style `lookup` (node:net, node:http, node:http2). */
type LookupCallback = (
  err: Error | null,
  address?: string | { address: string; family: number }[],
  family?: number,
) => void;

/**
 * NetGuard refuses outbound targets on loopback, private or link-local addresses (SSRF protection) unless
 * their host or address is listed in `NOTIFY_ALLOW_PRIVATE_NET` (hosts or CIDRs, comma-separated).
 * Names are resolved once and every address they resolve to must pass; connections are made through
 * {@linkcode NetGuard.lookup}, so they go to the addresses that were checked (no DNS rebinding between the
 * check and the connection).
 */
export class NetGuard {
  private readonly hosts = new Set<string>();
  private readonly cidrs: Cidr[] = [];

  constructor(allowList: string, private readonly resolver: Resolver = systemResolver) {
    for (const raw of allowList.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean)) {
      const cidr = parseCidr(raw);
      if (cidr) this.cidrs.push(cidr);
      else this.hosts.add(raw);
    }
  }

  private addressAllowed(address: string): boolean {
    const ip = ipToBigInt(address);
    if (!ip) return false;
    if (this.cidrs.some((c) => inCidr(ip, c))) return true;
    return !BLOCKED.some((c) => inCidr(ip, c));
  }

  /**
   * The addresses `host` (a name or an address) may be reached at: every address it resolves to, each
   * checked. Throws {@linkcode BlockedTargetError} when one is private and not allowed (an Error when the
   * name does not resolve).
   */
  async resolve(host: string): Promise<string[]> {
    const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
    let addresses: string[];
    if (isIP(name)) addresses = [name];
    else if (name === "localhost" || name.endsWith(".localhost")) addresses = ["127.0.0.1", "::1"];
    else {
      addresses = await this.resolver(name).catch(() => []);
      // Retryable like any network error (DNS may be failing for a while); a refusal is permanent.
      if (addresses.length === 0) throw new Error(`Host "${name}" does not resolve`);
    }
    if (this.hosts.has(name)) return addresses; // allowed by name, wherever it points
    for (const address of addresses) {
      if (!this.addressAllowed(address)) {
        throw new BlockedTargetError(
          `Host "${name}" resolves to a private or loopback address; allow it in NOTIFY_ALLOW_PRIVATE_NET`,
        );
      }
    }
    return addresses;
  }

  /** Throws {@linkcode BlockedTargetError} unless `host` (a name or an address) may be reached. */
  async check(host: string): Promise<void> {
    await this.resolve(host);
  }

  /**
   * Checks a literal address now: node:net connects to an address without calling `lookup`. A name is
   * checked by {@linkcode NetGuard.lookup} when the connection is made.
   */
  async preflight(host: string): Promise<void> {
    const bare = host.replace(/^\[|\]$/g, "");
    if (isIP(bare)) await this.check(bare);
  }

  /**
   * A node-style `lookup` for node:net, node:http(s) and node:http2: the name is resolved once, checked, and
   * the connection is made to those very addresses (what closes DNS rebinding). A refusal reaches the
   * request's `error` as the {@linkcode BlockedTargetError} itself.
   */
  readonly lookup = (
    hostname: string,
    options: { all?: boolean; family?: number | string } | number | LookupCallback,
    callback?: LookupCallback,
  ): void => {
    const cb = (typeof options === "function" ? options : callback)!;
    const opts = typeof options === "object" ? options : {};
    const wanted = typeof options === "number" ? options : Number(opts.family ?? 0) || 0;
    this.resolve(hostname).then((addresses) => {
      const found = addresses
        .map((address) => ({ address, family: isIP(address) }))
        .filter((a) => wanted === 0 || a.family === wanted);
      if (found.length === 0) {
        cb(new BlockedTargetError(`Host "${hostname}" has no IPv${wanted} address`));
      } else if (opts.all) cb(null, found);
      else cb(null, found[0]!.address, found[0]!.family);
    }, (err) => cb(err as Error));
  };

  /** Checks the host of a URL; only http and https are allowed. */
  async checkUrl(url: string): Promise<URL> {
    const parsed = NetGuard.parseUrl(url);
    await this.check(parsed.hostname);
    return parsed;
  }

  /** Parses an outbound URL; only http and https are allowed. */
  static parseUrl(url: string): URL {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new BlockedTargetError(`"${url}" is not a URL`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new BlockedTargetError(`URL scheme "${parsed.protocol}" is not allowed`);
    }
    return parsed;
  }
}
