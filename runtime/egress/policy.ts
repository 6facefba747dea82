/**
 * The egress policy of one function: which hosts its `allow_net` names (Deno's matching rules), and which
 * addresses are closed whatever it names (loopback, private, link-local and reserved ranges of IPv4 and IPv6,
 * the runtime machine's own addresses), minus what the operator opened, where the platform's ports stay closed.
 */
import { lookup } from "node:dns/promises";
import {
  type Cidr,
  embeddedIpv4,
  formatIp,
  inCidr,
  type Ip,
  isMapped,
  parseCidr,
  parseIp,
} from "../../lib/ip.ts";
import { openedRange, PRIVATE_V4, PRIVATE_V6_RANGES } from "../net_policy.ts";

/** What the policy is built from (sent by the platform with the function). */
export interface EgressRules {
  /** The function's `allow_net` entries. */
  allowNet: string[];
  /** FUNCTIONS_ALLOW_PRIVATE_NET entries: addresses or ranges opened to functions. */
  allowPrivate: string[];
  /** The platform's own ports: closed even on an opened address. */
  platformPorts: number[];
  /** The addresses of the machine's interfaces: closed unless opened. */
  ownAddresses: string[];
}

/** Why a target may not be reached: refused by the policy, or invalid. */
interface Refusal {
  refused: boolean;
  message: string;
}

/** The outcome of {@linkcode EgressPolicy.resolve}. */
type Resolution = { ok: true; addresses: string[] } | ({ ok: false } & Refusal);

/** The message of a refusal for a closed address. */
export function closed(where: string, reason: string): string {
  return `Requires net access to ${where}: ${reason} is closed to functions`;
}

const BLOCKED_V4 = PRIVATE_V4.map((r) => parseCidr(r)!);
const BLOCKED_V6 = PRIVATE_V6_RANGES.map((r) => parseCidr(r)!);

interface AllowEntry {
  any: boolean;
  host: string;
  wildcard: boolean;
  port: number | null;
}

function parseAllowEntry(entry: string): AllowEntry {
  if (entry === "*") return { any: true, host: "", wildcard: false, port: null };
  const m = entry.toLowerCase().match(/^(\*\.)?([^:]+)(?::(\d+))?$/);
  return {
    any: false,
    wildcard: Boolean(m?.[1]),
    host: (m?.[2] ?? "").replace(/\.$/, ""),
    port: m?.[3] ? Number(m[3]) : null,
  };
}

/** The host of a URL or a SOCKS request in the form the policy compares: lowercase, no brackets or final dot. */
function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}

/** An address in the form to judge: an IPv4-mapped IPv6 address is its IPv4 address. */
function judged(ip: Ip): Ip {
  return isMapped(ip) ? { family: 4, bytes: ip.bytes.slice(12) } : ip;
}

/**
 * EgressPolicy answers, for one function, whether a host and port may be reached, and resolves a name to the
 * addresses it may connect to: every address a name resolves to must pass, or the name is refused.
 */
export class EgressPolicy {
  private readonly allow: AllowEntry[];
  private readonly opened: Cidr[];
  private readonly own: Ip[];
  private readonly platformPorts: Set<number>;

  constructor(rules: EgressRules) {
    this.allow = rules.allowNet.map(parseAllowEntry);
    this.opened = rules.allowPrivate.map((e) => parseCidr(openedRange(e))).filter((c): c is Cidr =>
      c !== null
    )
      .map((c) =>
        c.family === 6 && isMapped(c) && c.prefix >= 96 ? { ...judged(c), prefix: c.prefix - 96 } : c
      );
    this.own = rules.ownAddresses.map((a) => parseIp(a)).filter((ip): ip is Ip => ip !== null).map(judged);
    this.platformPorts = new Set(rules.platformPorts);
  }

  /** True when `allow_net` names the host and port (Deno's rules: `*.d` also matches `d`; no port: any port). */
  allowsName(host: string, port: number): boolean {
    const h = normalizeHost(host);
    const literal = parseIp(h);
    const v4 = literal ? judged(literal) : null;
    for (const e of this.allow) {
      if (e.any) return true;
      if (e.port !== null && e.port !== port) continue;
      if (v4) {
        if (v4.family === 4 && formatIp(v4) === e.host) return true;
        continue;
      }
      if (h === e.host || (e.wildcard && h.endsWith(`.${e.host}`))) return true;
    }
    return false;
  }

  /** Why an address may not be connected to on `port`, or null when it may. */
  addressRefusal(address: string, port: number): string | null {
    const parsed = parseIp(address);
    if (!parsed) return "not an IP address";
    const ip = judged(parsed);
    if (this.opened.some((c) => inCidr(ip, c))) {
      return this.platformPorts.has(port) ? "the platform's own port" : null;
    }
    if (this.own.some((o) => o.family === ip.family && o.bytes.every((b, i) => b === ip.bytes[i]))) {
      return "an address of the runtime machine";
    }
    const blocked = ip.family === 4 ? BLOCKED_V4 : BLOCKED_V6;
    if (blocked.some((c) => inCidr(ip, c))) return "a loopback, private, link-local or reserved address";
    const inner = embeddedIpv4(ip);
    if (inner && BLOCKED_V4.some((c) => inCidr(inner, c))) {
      return `an address that reaches the private IPv4 address ${formatIp(inner)}`;
    }
    return null;
  }

  /**
   * Checks a host and port without resolving: the port, `allow_net`, and an address given literally. A name
   * that passes still has to pass {@linkcode resolve} where the connection is made.
   */
  check(host: string, port: number): Refusal | null {
    const h = normalizeHost(host);
    const where = `"${h.includes(":") ? `[${h}]` : h}:${port}"`;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return { refused: false, message: `Invalid port in ${where}` };
    }
    if (!this.allowsName(h, port)) {
      return { refused: true, message: `Requires net access to ${where}: not in the function's allow_net` };
    }
    const reason = parseIp(h) ? this.addressRefusal(h, port) : null;
    return reason ? { refused: true, message: closed(where, reason) } : null;
  }

  /**
   * Checks a host and port and resolves it to the addresses that may be connected to (in resolver order).
   * A name is refused when any of its addresses is closed: a name that mixes public and private addresses
   * could otherwise be steered to the private one.
   */
  async resolve(host: string, port: number): Promise<Resolution> {
    const refusal = this.check(host, port);
    if (refusal) return { ok: false, ...refusal };
    const h = normalizeHost(host);
    let addresses: string[];
    if (parseIp(h)) addresses = [h];
    else {
      try {
        addresses = (await lookup(h, { all: true, verbatim: true })).map((a) => a.address);
      } catch {
        return { ok: false, refused: false, message: `Host "${h}" does not resolve` };
      }
    }
    for (const address of addresses) {
      const reason = this.addressRefusal(address, port);
      if (reason) return { ok: false, refused: true, message: closed(`"${h}:${port}"`, reason) };
    }
    return { ok: true, addresses: addresses.map((a) => formatIp(judged(parseIp(a)!))) };
  }
}
