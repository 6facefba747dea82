import { lookup as dnsLookup } from "node:dns/promises";
import { EgressPolicy } from "../../runtime/egress/policy.ts";
import { parseCidr, parseIp } from "../../lib/ip.ts";
import { openedRange, ownAddresses } from "../../runtime/net_policy.ts";

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
 * NetGuard refuses outbound targets on loopback, private, link-local or reserved addresses (SSRF protection),
 * judged by the functions' egress policy, so IPv6 forms of such an IPv4 address (mapped, compatible, NAT64,
 * 6to4, Teredo) are refused as well, and so are the machine's own addresses, unless their host or address is
 * listed in `NOTIFY_ALLOW_PRIVATE_NET` (hosts or CIDRs, comma-separated).
 * Names are resolved once and every address they resolve to must pass; connections are made through
 * {@linkcode NetGuard.lookup}, so they go to the addresses that were checked (no DNS rebinding between the
 * check and the connection).
 */
export class NetGuard {
  private readonly hosts = new Set<string>();
  /** The functions' egress policy, with the allowed CIDRs opened: one address policy for all outbound calls. */
  private readonly policy: EgressPolicy;

  /** `own`: the machine's addresses (its interfaces' by default). */
  constructor(allowList: string, private readonly resolver: Resolver = systemResolver, own = ownAddresses()) {
    const opened: string[] = [];
    for (const raw of allowList.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean)) {
      if (parseCidr(openedRange(raw))) opened.push(raw);
      else this.hosts.add(raw);
    }
    // Any host, no platform port: the address ranges (and their IPv6 forms) and this machine's own addresses,
    // which reach its services as loopback would, are judged here.
    this.policy = new EgressPolicy({
      allowNet: ["*"],
      allowPrivate: opened,
      platformPorts: [],
      ownAddresses: own,
    });
  }

  /**
   * The addresses `host` (a name or an address) may be reached at: every address it resolves to, each
   * checked. Throws {@linkcode BlockedTargetError} when one is private and not allowed (an Error when the
   * name does not resolve).
   */
  async resolve(host: string): Promise<string[]> {
    const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
    let addresses: string[];
    if (parseIp(name)) addresses = [name];
    else if (name === "localhost" || name.endsWith(".localhost")) addresses = ["127.0.0.1", "::1"];
    else {
      addresses = await this.resolver(name).catch(() => []);
      // Retryable like any network error (DNS may be failing for a while); a refusal is permanent.
      if (addresses.length === 0) throw new Error(`Host "${name}" does not resolve`);
    }
    if (this.hosts.has(name)) return addresses; // allowed by name, wherever it points
    for (const address of addresses) {
      const reason = this.policy.addressRefusal(address, 0);
      if (reason) {
        throw new BlockedTargetError(
          `Host "${name}" resolves to a private or loopback address (${reason}); allow it in NOTIFY_ALLOW_PRIVATE_NET`,
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
    if (parseIp(bare)) await this.check(bare);
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
        .map((address) => ({ address, family: parseIp(address)!.family }))
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
