/**
 * A hand-written reader for the common shapes of `select=`, for speed (the combinator grammar allocates a reply
 * per character, and every request has a select). It returns exactly the items select_grammar.ts returns, or
 * `undefined` for anything else: an error, tabs and most blanks around items, JSON keys with blanks, quotes or
 * beyond ASCII, text ignored after a valid prefix, a limit passed. The grammar then reads the text again and answers.
 */
import type { Aggregate, SelectColumn, SelectItem } from "./ast.ts";
import { Scanner } from "./fast_grammar.ts";

const OPEN = 40; // (
const CLOSE = 41; // )
const STAR = 42; // *
const COMMA = 44;
const DOT = 46;
const COLON = 58;
const BANG = 33; // !
const QUOTE = 34; // "
const DASH = 45;
const GT = 62; // >
const SPACE = 32;
const LETTER = /^\p{L}$/u;
const EDGE_SPACES = /^ +| +$/g;

const CALLS: [string, Aggregate][] = [
  [".sum()", "sum"],
  [".avg()", "avg"],
  [".count()", "count"],
  [".max()", "max"],
  [".min()", "min"],
];

/** `[A-Za-z0-9_$]`: a name's ASCII characters but the space. */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36;
}

class SelectScanner extends Scanner {
  private items = 0;
  constructor(s: string, private readonly maxItems: number, private readonly maxDepth: number) {
    super(s);
  }

  /**
   * The grammar's `fieldName`: as Scanner's, with letters beyond ASCII and blanks inside names too (stripped from
   * each `-` segment, as the grammar's identifiers are). Not from a blank: there the grammar may skip blanks first.
   */
  override fieldName(): string | undefined {
    const first = this.code();
    if (first === QUOTE) return this.quoted();
    if (first === SPACE) return undefined;
    const start = this.i;
    let spaced = false;
    while (true) {
      const segment = this.i;
      spaced = this.nameChars() || spaced;
      if (this.i === segment) return undefined;
      if (this.code() !== DASH || this.code(this.i + 1) === GT) break;
      this.i++;
    }
    const name = this.s.slice(start, this.i);
    if (!spaced) return name;
    const segments = name.split("-").map((segment) => segment.replace(EDGE_SPACES, ""));
    return segments.includes("") ? undefined : segments.join("-");
  }

  /** Reads name characters; true if a space was among them. */
  private nameChars(): boolean {
    let spaced = false;
    while (true) {
      const c = this.code();
      if (isNameChar(c)) this.i++;
      else if (c === SPACE) {
        spaced = true;
        this.i++;
      } else if (c > 127) {
        const letter = String.fromCodePoint(this.s.codePointAt(this.i)!);
        if (!LETTER.test(letter)) return spaced;
        this.i += letter.length;
      } else return spaced;
    }
  }

  /** Where an item may end: `,`, `)` or the end (not consumed). */
  private atItemEnd(): boolean {
    const c = this.code();
    return c !== c || c === COMMA || c === CLOSE;
  }

  /** Items separated by `,` (blanks after it, or before it after an embed), up to a `)` or the end. */
  forest(depth: number): SelectItem[] | undefined {
    if (depth > this.maxDepth) return undefined;
    const items: SelectItem[] = [];
    if (this.atItemEnd() && this.code() !== COMMA) return items;
    while (true) {
      this.skipBlanks();
      const item = this.item(depth);
      if (item === undefined || ++this.items > this.maxItems) return undefined;
      items.push(item);
      // Blanks may come before a `,` (after an embed's `)`: a column's name or type has taken them).
      const end = this.i;
      this.skipBlanks();
      if (this.code() !== COMMA) {
        this.i = end;
        return items;
      }
      this.i++;
    }
  }

  private item(depth: number): SelectItem | undefined {
    if (this.code() === STAR) {
      this.i++;
      return this.atItemEnd() ? { kind: "star" } : undefined;
    }
    if (this.s.startsWith("...", this.i)) {
      this.i += 3;
      const name = this.fieldName();
      return name === undefined ? undefined : this.embed(depth, name, undefined, true);
    }
    let start = this.i;
    let name = this.fieldName();
    if (name === undefined) return undefined;
    let alias: string | undefined;
    if (this.code() === COLON && this.code(this.i + 1) !== COLON) {
      this.i++;
      alias = name;
      start = this.i;
      name = this.fieldName();
      if (name === undefined) return undefined;
    }
    const c = this.code();
    if (c === OPEN || c === BANG) {
      // No resource is named `count`: `count()` is the aggregate, anything else there an error.
      if (name !== "count") return this.embed(depth, name, alias, false);
      return this.s.startsWith("count()", start) ? this.countAll(alias, start + 7) : undefined;
    }
    return this.column(name, alias);
  }

  /** `::type` (undefined: none), or null when it is not one this reader handles. */
  private cast(): string | undefined | null {
    if (this.code() !== COLON || this.code(this.i + 1) !== COLON) return undefined;
    const start = this.i += 2;
    for (let c = this.code(); isNameChar(c) || c === SPACE; c = this.code()) this.i++;
    const type = this.s.slice(start, this.i).replace(EDGE_SPACES, "");
    return type === "" ? null : type;
  }

  private countAll(alias: string | undefined, at: number): SelectItem | undefined {
    this.i = at;
    const fnType = this.cast();
    if (fnType === null || !this.atItemEnd()) return undefined;
    const item: SelectColumn = { kind: "column", field: { name: "*", path: [] }, alias, aggregate: "count" };
    if (fnType !== undefined) item.aggregateCast = fnType;
    return item;
  }

  private column(name: string, alias: string | undefined): SelectItem | undefined {
    const path = this.jsonPath();
    if (path === undefined) return undefined;
    const type = this.cast();
    if (type === null) return undefined;
    let fn: Aggregate | undefined;
    if (this.code() === DOT) {
      const call = CALLS.find(([text]) => this.s.startsWith(text, this.i));
      if (call === undefined) return undefined;
      this.i += call[0].length;
      fn = call[1];
    }
    const fnType = this.cast();
    if (fnType === null || !this.atItemEnd()) return undefined;
    // A quoted `"*"` alone is `*` (the grammar's tree is the same).
    if (name === "*" && !path.length && !alias && !type && !fn && !fnType) return undefined;
    const item: SelectColumn = { kind: "column", field: { name, path }, alias, cast: type };
    if (fn) item.aggregate = fn;
    if (fnType !== undefined) item.aggregateCast = fnType;
    return item;
  }

  /** `[!hint][!inner](…)` after the name: the first hint and the first join type of up to two. */
  private embed(
    depth: number,
    name: string,
    alias: string | undefined,
    spread: boolean,
  ): SelectItem | undefined {
    let hint: string | undefined;
    let join: "left" | "inner" | undefined;
    for (let k = 0; k < 2 && this.code() === BANG; k++) {
      this.i++;
      if (this.s.startsWith("left", this.i)) {
        join ??= "left";
        this.i += 4;
      } else if (this.s.startsWith("inner", this.i)) {
        join ??= "inner";
        this.i += 5;
      } else {
        const h = this.fieldName();
        if (h === undefined) return undefined;
        hint ??= h;
      }
    }
    if (this.code() !== OPEN) return undefined;
    this.i++;
    const select = this.forest(depth + 1);
    if (select === undefined || this.code() !== CLOSE) return undefined;
    this.i++;
    return { kind: "embed", name, alias, hint, join: join ?? "left", spread, select };
  }
}

/** The select grammar's items over the whole text, within the limits; undefined: left to the grammar. */
export function fastSelect(text: string, maxItems: number, maxDepth: number): SelectItem[] | undefined {
  const s = new SelectScanner(text, maxItems, maxDepth);
  const items = s.forest(0);
  return items !== undefined && s.atEnd() ? items : undefined;
}
