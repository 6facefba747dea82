import { byteString } from "../../lib/encoding.ts";

/**
 * `Content-Location` of a read, as PostgREST writes it: `/{table}` and the query string in canonical form —
 * parameters sorted by name, repeated names joined by commas, every byte but `A-Za-z0-9-_.~` percent-encoded
 * (the bytes of a multi-byte character each encoded as the character it would be in Latin-1, as PostgREST's
 * encoder does).
 */
export function contentLocation(table: string, rawQuery: string): string {
  const pairs: [string, string][] = [];
  for (const part of rawQuery.replace(/^\?/, "").split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    pairs.push(eq < 0 ? [bytesOf(part), ""] : [bytesOf(part.slice(0, eq)), bytesOf(part.slice(eq + 1))]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const groups: string[] = [];
  for (let i = 0; i < pairs.length;) {
    const key = pairs[i]![0];
    const values: string[] = [];
    for (; i < pairs.length && pairs[i]![0] === key; i++) values.push(encode(pairs[i]![1]));
    groups.push(`${encode(key)}=${values.join(",")}`);
  }
  // The table's name as its UTF-8 bytes, as PostgREST writes it (a header holds bytes; `موارد` was a TypeError).
  return `/${byteString(new TextEncoder().encode(table))}${groups.length > 0 ? `?${groups.join("&")}` : ""}`;
}

/** A query component decoded (`+` is a space, `%XX` a byte) into a string of one char per byte. */
function bytesOf(text: string): string {
  let out = "";
  const s = text.replaceAll("+", " ");
  const utf8 = new TextEncoder();
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "%" && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      out += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c.charCodeAt(0) < 0x80) {
      out += c;
    } else {
      const cp = s.codePointAt(i)!;
      if (cp > 0xffff) i++;
      out += byteString(utf8.encode(String.fromCodePoint(cp)));
    }
  }
  return out;
}

const hex = (b: number) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`;

function encode(bytes: string): string {
  let out = "";
  const utf8 = new TextEncoder();
  for (const c of bytes) {
    const code = c.charCodeAt(0);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (code < 0x80) out += hex(code);
    else for (const b of utf8.encode(c)) out += hex(b);
  }
  return out;
}
