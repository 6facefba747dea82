/** A project's URL settings in force: where recovery links land (GoTrue's SITE_URL and URI_ALLOW_LIST). */
export interface RedirectSettings {
  /** Where a link lands when the request named no allowed address; none: only allowed ones are used. */
  siteUrl: string | null;
  /** Glob patterns of the other addresses a link may land on. */
  redirectUrls: readonly string[];
}

const DECIMAL_IP = /^[0-9]+$/;
const REGULAR_HOSTNAME = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** The escaped regular expression of a glob pattern's literal text. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * A glob pattern as GoTrue compiles an allow-list entry, with `.` and `/` as separators: `*` matches within a
 * host label or a path segment, `**` across them, `?` one character of one, `{a,b}` either, `\` escapes.
 */
export function globToRegExp(pattern: string): RegExp {
  let out = "";
  let inBraces = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "\\" && i + 1 < pattern.length) out += literal(pattern[++i]!);
    else if (ch === "*" && pattern[i + 1] === "*") {
      out += ".*";
      while (pattern[i + 1] === "*") i++;
    } else if (ch === "*") out += "[^./]*";
    else if (ch === "?") out += "[^./]";
    else if (ch === "{" && !inBraces) {
      inBraces = true;
      out += "(?:";
    } else if (ch === "}" && inBraces) {
      inBraces = false;
      out += ")";
    } else if (ch === "," && inBraces) out += "|";
    else out += literal(ch);
  }
  if (inBraces) return new RegExp(`^${literal(pattern)}$`); // an unclosed brace is literal text
  return new RegExp(`^${out}$`, "s");
}

const compiled = new Map<string, RegExp>();

function matches(pattern: string, url: string): boolean {
  let re = compiled.get(pattern);
  if (!re) {
    re = globToRegExp(pattern);
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(pattern, re);
  }
  return re.test(url);
}

const isLoopbackName = (host: string) => host === "localhost" || host === "[::1]" || /^127\./.test(host);

/**
 * True when a link may land on `url`, as GoTrue decides: an address of the site itself (same scheme and host,
 * same port but on loopback), a loopback IP address, or one an allow-list pattern matches (without the
 * fragment). Control characters, unparsable http(s) addresses, decimal IPs and other IP addresses are refused.
 */
export function isRedirectAllowed(settings: RedirectSettings, url: string): boolean {
  if (url === "" || [...url].some((ch) => ch <= " " || ch === "\x7f")) return false;
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    if (/^https?:/i.test(url)) return false;
  }
  if (parsed) {
    const site = settings.siteUrl ? new URL(settings.siteUrl) : null;
    const host = parsed.hostname;
    if (
      site && site.hostname === host && site.protocol === parsed.protocol &&
      (site.port === parsed.port || isLoopbackName(host))
    ) return true;
    const http = parsed.protocol === "http:" || parsed.protocol === "https:";
    if (DECIMAL_IP.test(host)) return false;
    if (IPV4.test(host) || host.startsWith("[")) return host.startsWith("127.") || host === "[::1]";
    if (http && !REGULAR_HOSTNAME.test(host)) return false;
  }
  const withoutFragment = url.split("#")[0]!;
  return settings.redirectUrls.some((pattern) => matches(pattern, withoutFragment));
}

/**
 * Where a link lands: `requested` when it is allowed, else the site URL (GoTrue's choice: never the refused
 * address); null when neither exists.
 */
export function redirectTarget(settings: RedirectSettings, requested: string | undefined): string | null {
  if (requested !== undefined && isRedirectAllowed(settings, requested)) return requested;
  return settings.siteUrl;
}
