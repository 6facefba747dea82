/**
 * The deepest nesting of arrays and objects a JSON body (or a query string) may have. Real payloads stay far
 * below it; PGlite's engine overflows its stack on `jsonb` input a few thousand levels deep, and JSON.stringify
 * and zod recurse, so the bound is enforced before anything parses or stores the value.
 */
export const MAX_JSON_DEPTH = 512;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * True when the brackets of `bytes` (JSON text) nest deeper than `limit`, counted outside strings in one pass:
 * no recursion and no allocation, whatever the input. Malformed JSON is left to the parser.
 */
export function jsonTooDeep(bytes: Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if ((b === CLOSE_ARRAY || b === CLOSE_OBJECT) && depth > 0) depth--;
  }
  return false;
}

/**
 * True when the query of `url` nests `[`/`{` (raw or percent-encoded) deeper than `limit`: JSON values reach
 * the database through filters (`cs.{…}`, `eq.[…]`) and RPC arguments too. Quotes are not tracked here, so a
 * quoted text value with more than `limit` unclosed brackets is refused as well.
 */
export function queryTooDeep(url: string, limit = MAX_JSON_DEPTH): boolean {
  const start = url.indexOf("?");
  if (start < 0) return false;
  let depth = 0;
  for (let i = start + 1; i < url.length; i++) {
    let c = url.charCodeAt(i);
    if (c === 0x25 && i + 2 < url.length) { // %XX
      const hi = url.charCodeAt(i + 1);
      const lo = url.charCodeAt(i + 2) | 0x20; // lower case
      if (hi === 0x35 || hi === 0x37) { // %5B %5D %7B %7D
        if (lo === 0x62) c = hi === 0x35 ? OPEN_ARRAY : OPEN_OBJECT;
        else if (lo === 0x64) c = hi === 0x35 ? CLOSE_ARRAY : CLOSE_OBJECT;
        if (c !== 0x25) i += 2;
      }
    }
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && depth > 0) depth--;
  }
  return false;
}
