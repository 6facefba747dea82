/**
 * The casts of `select=` are written into the SQL as they are (PostgREST does the same), so beyond what the
 * grammar lets through (letters, digits, `_`, `$` and spaces) each must be a plain type name: `$$` would open a
 * dollar-quoted string, and several words could be SQL of their own.
 */
import type { SelectItem } from "./ast.ts";
import { restErrors } from "../../lib/rest_errors.ts";

const TYPE_WORD = /^[\p{L}_][\p{L}0-9_$]*$/u;
const TYPE_PHRASES = new Set([
  "double precision",
  "character varying",
  "char varying",
  "bit varying",
  "national character",
  "national character varying",
  "national char",
  "national char varying",
  "time with time zone",
  "time without time zone",
  "timestamp with time zone",
  "timestamp without time zone",
]);

/** A type name: one word, or one of SQL's types of several words (blanks between words are any number). */
function isTypeName(cast: string): boolean {
  const words = cast.split(/ +/);
  return words.every((w) => TYPE_WORD.test(w)) &&
    (words.length === 1 || TYPE_PHRASES.has(words.join(" ").toLowerCase()));
}

/** Refuses (PGRST100) the first cast of the items, at any depth, that is not a type name. */
export function checkCasts(items: SelectItem[], raw: string): void {
  for (const item of items) {
    if (item.kind === "embed") checkCasts(item.select, raw);
    if (item.kind !== "column") continue;
    for (const cast of [item.cast, item.aggregateCast]) {
      if (cast !== undefined && !isTypeName(cast)) {
        throw restErrors.parse(`failed to parse select parameter (${raw})`, `"${cast}" is not a type name`);
      }
    }
  }
}
