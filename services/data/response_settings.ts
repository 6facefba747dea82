import { RestError } from "../../lib/rest_errors.ts";
import { byteString } from "../../lib/encoding.ts";

/** What a request's SQL asked of its answer through `response.headers` and `response.status`. */
export interface SqlResponse {
  /** Replaces the engine's status. */
  status?: number;
  /** In order; a name given twice (two `Set-Cookie`) is sent twice; each replaces the engine's own header. */
  headers: [string, string][];
}

const HEADERS_MESSAGE =
  "response.headers guc must be a JSON array composed of objects with a single key and a string value";
const STATUS_MESSAGE = "response.status guc must be a valid status code";

/**
 * Reads the row of `current_setting('response.headers'|'response.status')` as PostgREST does: headers a JSON
 * array of one-key objects with string values (else 500 PGRST111), status a number (else 500 PGRST112; it
 * reads the leading digits). Statuses outside 200–599 are refused too: an HTTP answer cannot carry them.
 */
export function sqlResponse(row: Record<string, unknown> | undefined): SqlResponse {
  const out: SqlResponse = { headers: [] };
  const headers = row?.headers;
  if (typeof headers === "string" && headers !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(headers);
    } catch {
      throw new RestError(500, "PGRST111", HEADERS_MESSAGE);
    }
    if (!Array.isArray(parsed)) throw new RestError(500, "PGRST111", HEADERS_MESSAGE);
    for (const item of parsed) {
      const entries = item !== null && typeof item === "object" && !Array.isArray(item)
        ? Object.entries(item)
        : [];
      const [name, value] = entries[0] ?? [];
      if (entries.length !== 1 || typeof value !== "string" || !validHeader(name!, value)) {
        throw new RestError(500, "PGRST111", HEADERS_MESSAGE);
      }
      out.headers.push([name!.toLowerCase(), wireText(value)]);
    }
  }
  const status = row?.status;
  if (typeof status === "string" && status !== "") {
    const digits = /^\d{1,9}/.exec(status)?.[0];
    const n = digits === undefined ? NaN : Number(digits);
    if (!(n >= 200 && n <= 599)) throw new RestError(500, "PGRST112", STATUS_MESSAGE);
    out.status = n;
  }
  return out;
}

const utf8 = new TextEncoder();

/**
 * A header value as the bytes PostgREST sends: UTF-8. Headers carry bytes (a JavaScript header string is one
 * character per byte), so text beyond ASCII goes as its UTF-8 bytes, never refused.
 */
function wireText(value: string): string {
  if (/^[\t -~]*$/.test(value)) return value; // ASCII (validHeader refused the other control characters)
  return byteString(utf8.encode(value));
}

/** A header HTTP can carry (a name of token characters, a value without control characters). */
function validHeader(name: string, value: string): boolean {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return false;
  }
  return true;
}
