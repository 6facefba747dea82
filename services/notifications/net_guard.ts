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

/**
 * NetGuard refuses outbound targets on loopback, private or link-local addresses (SSRF protection) unless
 * their host or address is listed in `NOTIFY_ALLOW_PRIVATE_NET` (hosts or CIDRs, comma-separated).
 * Names are resolved and every address they resolve to must pass.
 */
export class NetGuard {
  private readonly hosts = new Set<string>();
  private readonly cidrs: Cidr[] = [];

  constructor(allowList: string) {
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

  /** Throws {@linkcode BlockedTargetError} unless `host` (a name or an address) may be reached. */
  async check(host: string): Promise<void> {
    const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
    if (this.hosts.has(name)) return;
    let addresses: string[];
    if (isIP(name)) addresses = [name];
    else if (name === "localhost" || name.endsWith(".localhost")) addresses = ["127.0.0.1", "::1"];
    else {
      const results = await Promise.allSettled([
        Deno.resolveDns(name, "A"),
        Deno.resolveDns(name, "AAAA"),
      ]);
      addresses = results.flatMap((r) => r.status === "fulfilled" ? r.value : []);
      if (addresses.length === 0) throw new BlockedTargetError(`Host "${name}" does not resolve`);
    }
    for (const address of addresses) {
      if (!this.addressAllowed(address)) {
        throw new BlockedTargetError(
          `Host "${name}" resolves to a private or loopback address; allow it in NOTIFY_ALLOW_PRIVATE_NET`,
        );
      }
    }
  }

  /** Checks the host of a URL; only http and https are allowed. */
  async checkUrl(url: string): Promise<URL> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new BlockedTargetError(`"${url}" is not a URL`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new BlockedTargetError(`URL scheme "${parsed.protocol}" is not allowed`);
    }
    await this.check(parsed.hostname);
    return parsed;
  }
}
