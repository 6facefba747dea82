/**
 * Hand-written readers for the common shapes of the query-string grammar (grammar.ts), for speed: the
 * combinator grammar allocates a reply per character, while almost every request parses. Each reader returns
 * exactly the value the grammar returns, or `undefined` when the text is anything it does not handle (an error,
 * blanks, non-ASCII names, text ignored after a valid prefix, …): the grammar then reads the text again and is
 * the one that answers, with its value or its exact error. A reader never throws.
 */
import type { Field, JsonStep, Operator, OrderTerm } from "./ast.ts";
import type { OpExpr, Tree } from "./grammar.ts";

/** Deeper logic trees are left to the grammar (which refuses what is too deep). */
const MAX_FAST_DEPTH = 20;

const QUOTE = 34; // "
const BACKSLASH = 92;
const DOT = 46;
const COMMA = 44;
const OPEN = 40; // (
const CLOSE = 41; // )
const DASH = 45;
const GT = 62; // >
const COLON = 58;
const SPACE = 32;
const TAB = 9;

/** `[A-Za-z0-9_$]`: the ASCII part of the grammar's identifier (its blanks and other letters are left to it). */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36;
}

/** A JSON key character: printable ASCII but `(-:.,>)` and `"` (and no blank, which the grammar trims). */
function isKeyChar(c: number): boolean {
  return c > 32 && c < 127 && c !== OPEN && c !== DASH && c !== COLON && c !== DOT && c !== COMMA &&
    c !== GT && c !== CLOSE && c !== QUOTE;
}

const isDigit = (c: number) => c >= 48 && c <= 57;

const SIMPLE_OPERATORS = new Set(["neq", "cs", "cd", "ov", "sl", "sr", "nxr", "nxl", "adj"]);
const QUANT_OPERATORS = new Set(["eq", "gte", "gt", "lte", "lt", "like", "ilike", "match", "imatch"]);
const FTS_OPERATORS = new Set(["fts", "plfts", "phfts", "wfts"]);
const IS_VALUES = ["null", "not_null", "true", "false", "unknown"];

/** A cursor over one text; `undefined` from a method means "not handled here". (fast_select.ts reads on it.) */
export class Scanner {
  i = 0;
  constructor(readonly s: string) {}

  code(at = this.i): number {
    return this.s.charCodeAt(at); // NaN past the end: `c !== c` below is "at the end"
  }

  atEnd(): boolean {
    return this.i >= this.s.length;
  }

  skipBlanks(): void {
    let c = this.code();
    while (c === SPACE || c === TAB) c = this.code(++this.i);
  }

  /** `"…"` with `\x` escapes, from a quote; undefined when unterminated. */
  quoted(): string | undefined {
    const s = this.s;
    let j = this.i + 1;
    let out = "";
    let from = j;
    while (true) {
      const c = s.charCodeAt(j);
      if (c !== c) return undefined; // NaN: the end
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        if (j + 1 >= s.length) return undefined;
        out += s.slice(from, j);
        from = j + 1;
        j += 2;
        continue;
      }
      j++;
    }
    this.i = j + 1;
    return out + s.slice(from, j);
  }

  /** The grammar's `fieldName`: a quoted name, or names joined by `-` (a `-` not starting `->`). */
  fieldName(): string | undefined {
    if (this.code() === QUOTE) return this.quoted();
    const start = this.i;
    while (true) {
      const segment = this.i;
      while (isNameChar(this.code())) this.i++;
      if (this.i === segment) return undefined;
      if (this.code() !== DASH || this.code(this.i + 1) === GT) return this.s.slice(start, this.i);
      this.i++;
    }
  }

  /** Where a JSON index may end: `->`, `::`, `.`, `,` or the end. */
  private jsonEndAt(j: number): boolean {
    const c = this.s.charCodeAt(j);
    if (c !== c || c === DOT || c === COMMA) return true;
    const d = this.s.charCodeAt(j + 1);
    return (c === DASH && d === GT) || (c === COLON && d === COLON);
  }

  /** The grammar's `jsonPath`: `->a->>0`…; an empty path when there is no arrow. */
  jsonPath(): JsonStep[] | undefined {
    const path: JsonStep[] = [];
    while (this.code() === DASH && this.code(this.i + 1) === GT) {
      const op = this.code(this.i + 2) === GT ? "->>" : "->";
      this.i += op.length;
      const start = this.i;
      if (this.code() === DASH) {
        // A negative index; anything else starting with `-` is an error.
        this.i++;
        while (isDigit(this.code())) this.i++;
        if (this.i === start + 1 || !this.jsonEndAt(this.i)) return undefined;
        path.push({ op, key: this.s.slice(start, this.i), index: true });
        continue;
      }
      let digits = true;
      while (true) {
        const segment = this.i;
        for (let c = this.code(); isKeyChar(c); c = this.code(++this.i)) if (!isDigit(c)) digits = false;
        if (this.i === segment) return undefined;
        if (this.code() !== DASH || this.code(this.i + 1) === GT) break;
        digits = false;
        this.i++;
      }
      path.push({ op, key: this.s.slice(start, this.i), index: digits && this.jsonEndAt(this.i) });
    }
    return path;
  }

  /** `fieldName` then an optional JSON path. */
  field(): Field | undefined {
    const name = this.fieldName();
    if (name === undefined) return undefined;
    const path = this.jsonPath();
    return path === undefined ? undefined : { name, path };
  }

  /** Names separated by `.`. */
  dottedNames(): string[] | undefined {
    const names: string[] = [];
    while (true) {
      const name = this.fieldName();
      if (name === undefined) return undefined;
      names.push(name);
      if (this.code() !== DOT) return names;
      this.i++;
    }
  }

  /** A run of lower-case letters (an operator's name). */
  private word(): string {
    const start = this.i;
    let c = this.code();
    while (c >= 97 && c <= 122) c = this.code(++this.i);
    return this.s.slice(start, this.i);
  }

  private expect(c: number): boolean {
    if (this.code() !== c) return false;
    this.i++;
    return true;
  }

  /** Up to `,` or `)` (possibly nothing). */
  private raw(): string {
    const start = this.i;
    let c = this.code();
    while (c === c && c !== COMMA && c !== CLOSE) c = this.code(++this.i);
    return this.s.slice(start, this.i);
  }

  /** A quoted item followed by `,`, `)` or the end; otherwise the text as is, quotes included. */
  private quotedOrRaw(): string {
    const start = this.i;
    const q = this.quoted();
    if (q !== undefined) {
      const c = this.code();
      if (c !== c || c === COMMA || c === CLOSE) return q;
    }
    this.i = start;
    return this.raw();
  }

  /** The grammar's `logicValue`: a quoted value, a `{…}` array, or text up to `,` or `)`. */
  private logicValue(): string {
    const c = this.code();
    if (c === QUOTE) return this.quotedOrRaw();
    if (c === 123) { // {
      const s = this.s;
      let j = this.i + 1;
      let d = s.charCodeAt(j);
      while (d === d && d !== 123 && d !== 125) d = s.charCodeAt(++j);
      if (d === 125) {
        const value = s.slice(this.i, j + 1);
        this.i = j + 1;
        return value;
      }
    }
    return this.raw();
  }

  /** The grammar's `listValue`: `(a,"b,c")`, blanks allowed around the parentheses. */
  private list(): string[] | undefined {
    this.skipBlanks();
    if (!this.expect(OPEN)) return undefined;
    this.skipBlanks();
    const items: string[] = [];
    while (true) {
      items.push(this.code() === QUOTE ? this.quotedOrRaw() : this.raw());
      if (!this.expect(COMMA)) break;
    }
    if (!this.expect(CLOSE)) return undefined;
    this.skipBlanks();
    return items;
  }

  /** `null`, `not_null`, `true`, `false`, `unknown`, in any case letter by letter. */
  private isValue(): string | undefined {
    for (const word of IS_VALUES) {
      if (this.s.length - this.i < word.length) continue;
      const text = this.s.slice(this.i, this.i + word.length);
      if (text.toLowerCase() !== word) continue;
      // The grammar accepts each letter lower or upper case only (not a mixed form `toLowerCase` would fold).
      let ok = true;
      for (let k = 0; k < word.length && ok; k++) {
        ok = text[k] === word[k] || text[k] === word[k]!.toUpperCase();
      }
      if (!ok) return undefined;
      this.i += word.length;
      return word;
    }
    return undefined;
  }

  /** `[not.]op[(any|all)|(lang)].value`; `top`: the value is the rest of the text. */
  opExpr(top: boolean): OpExpr | undefined {
    let negate = false;
    if (this.s.startsWith("not.", this.i)) {
      negate = true;
      this.i += 4;
    }
    const op = this.word() as Operator;
    const next = this.code();
    if (op === "in") {
      if (next !== DOT) return undefined;
      this.i++;
      const list = this.list();
      if (list === undefined || (top && !this.atEnd())) return undefined;
      return { negate, op, value: list };
    }
    if (op === "is") {
      if (next !== DOT) return undefined;
      this.i++;
      const value = this.isValue();
      if (value === undefined || (top && !this.atEnd())) return undefined;
      return { negate, op, value };
    }
    let language: string | undefined;
    let quantifier: "any" | "all" | undefined;
    if (FTS_OPERATORS.has(op)) {
      if (next === OPEN) {
        const start = ++this.i;
        while (isNameChar(this.code())) this.i++;
        if (this.i === start || this.code() !== CLOSE) return undefined;
        language = this.s.slice(start, this.i++);
      }
    } else if (QUANT_OPERATORS.has(op)) {
      if (next === OPEN) {
        if (this.s.startsWith("(any)", this.i)) quantifier = "any";
        else if (this.s.startsWith("(all)", this.i)) quantifier = "all";
        else return undefined;
        this.i += 5;
      }
    } else if (!SIMPLE_OPERATORS.has(op) && op !== "isdistinct") return undefined;
    if (!this.expect(DOT)) return undefined;
    let value: string;
    if (top) {
      value = this.s.slice(this.i);
      this.i = this.s.length;
    } else value = this.logicValue();
    if (language !== undefined) return { negate, op, language, value };
    if (quantifier !== undefined) return { negate, op, quantifier, value };
    return { negate, op, value };
  }

  /** The children of a logic tree, from `(` through `)` and the blanks after it. */
  children(depth: number): Tree[] | undefined {
    if (depth > MAX_FAST_DEPTH || !this.expect(OPEN)) return undefined;
    const children: Tree[] = [];
    while (true) {
      this.skipBlanks();
      const child = this.tree(depth);
      if (child === undefined) return undefined;
      children.push(child);
      const c = this.code();
      if (c === SPACE || c === TAB) {
        // Blanks may come before a `,` only (before `)` they are an error).
        this.skipBlanks();
        if (this.code() !== COMMA) return undefined;
      }
      if (this.expect(COMMA)) continue;
      if (!this.expect(CLOSE)) return undefined;
      this.skipBlanks();
      return children;
    }
  }

  /** One element of a logic tree: `and(…)`, `not.or(…)` or `col.op.value`. */
  private tree(depth: number): Tree | undefined {
    const s = this.s;
    let at = this.i;
    const negate = s.startsWith("not.", at);
    if (negate) at += 4;
    const op = s.startsWith("and(", at) ? "and" : s.startsWith("or(", at) ? "or" : undefined;
    if (op !== undefined) {
      this.i = at + op.length;
      const children = this.children(depth + 1);
      return children === undefined ? undefined : { kind: "logic", op, negate, children };
    }
    const field = this.field();
    if (field === undefined || !this.expect(DOT)) return undefined;
    const expr = this.opExpr(false);
    return expr === undefined ? undefined : { kind: "filter", field, expr };
  }

  /** One term of `order=`: `col[->path]` or `embed(col)`, then `.asc|.desc` and `.nullsfirst|.nullslast`. */
  orderTerm(): OrderTerm | undefined {
    this.skipBlanks();
    const name = this.fieldName();
    if (name === undefined) return undefined;
    let term: OrderTerm;
    if (this.code() === OPEN) {
      this.i++;
      const field = this.field();
      if (field === undefined || !this.expect(CLOSE)) return undefined;
      term = { embed: name, field };
    } else {
      const path = this.jsonPath();
      if (path === undefined) return undefined;
      term = { field: { name, path } };
    }
    if (this.s.startsWith(".asc", this.i)) {
      term.direction = "asc";
      this.i += 4;
    } else if (this.s.startsWith(".desc", this.i)) {
      term.direction = "desc";
      this.i += 5;
    }
    if (this.s.startsWith(".nullsfirst", this.i)) {
      term.nulls = "first";
      this.i += 11;
    } else if (this.s.startsWith(".nullslast", this.i)) {
      term.nulls = "last";
      this.i += 10;
    }
    const c = this.code();
    return c !== c || c === COMMA ? term : undefined;
  }
}

/** The grammar's `treePath` over the whole text. */
export function fastTreePath(text: string): { embed: string[]; field: Field } | undefined {
  const s = new Scanner(text);
  const names = s.dottedNames();
  if (names === undefined) return undefined;
  const path = s.jsonPath();
  if (path === undefined || !s.atEnd()) return undefined;
  return { embed: names.slice(0, -1), field: { name: names.at(-1)!, path } };
}

/** The grammar's `logicPath` over the whole text. */
export function fastLogicPath(text: string): { embed: string[]; op: string } | undefined {
  const s = new Scanner(text);
  const path = s.dottedNames();
  if (path === undefined || !s.atEnd()) return undefined;
  const op = path.at(-1)!;
  return { embed: path.slice(0, -1).filter((n) => n !== "not"), op: path.includes("not") ? `not.${op}` : op };
}

/** The grammar's `columns` over the whole text. */
export function fastColumns(text: string): string[] | undefined {
  const s = new Scanner(text);
  const names: string[] = [];
  while (true) {
    const name = s.fieldName();
    if (name === undefined) return undefined;
    names.push(name);
    if (s.atEnd()) return names;
    if (s.code() !== COMMA) return undefined;
    s.i++;
    s.skipBlanks();
  }
}

/** `opExpr(singleValue)` (top: a filter's whole value) or `opExpr(logicValue)` over the whole text. */
export function fastOpExpr(text: string, top: boolean): OpExpr | undefined {
  const s = new Scanner(text);
  const expr = s.opExpr(top);
  return expr !== undefined && s.atEnd() ? expr : undefined;
}

/** The grammar's `logicTree` for `[not.]op(…)`, given the operator and the text from its `(`. */
export function fastLogicTree(op: "and" | "or", negate: boolean, raw: string): Tree | undefined {
  const s = new Scanner(raw);
  const children = s.children(0);
  if (children === undefined || !s.atEnd()) return undefined;
  return { kind: "logic", op, negate, children };
}

/** The grammar's `order` over the whole text. */
export function fastOrder(text: string): OrderTerm[] | undefined {
  const s = new Scanner(text);
  const terms: OrderTerm[] = [];
  while (true) {
    const term = s.orderTerm();
    if (term === undefined) return undefined;
    terms.push(term);
    if (s.atEnd()) return terms;
    s.i++; // the `,` orderTerm ended at
  }
}
