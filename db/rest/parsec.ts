/**
 * A small parser-combinator kernel with Parsec's error semantics (consumed/empty replies, `try`, labels, errors
 * merged at the furthest position). PostgREST parses its query string with Parsec and answers a failure with
 * Parsec's own text ("unexpected \"x\" expecting …" at "(line 1, column n)"); keeping the same semantics here is
 * what makes the grammar's messages match, not only its language.
 */

/** SysUnExpect, UnExpect, Expect, Message: Parsec sorts and shows the messages of an error in this order. */
type Kind = 0 | 1 | 2 | 3;

/** `text` is the character itself for the two "unexpected" kinds, shown only when an error is described. */
interface Message {
  kind: Kind;
  text: string;
}

/** An error at an index of the input; no messages is Parsec's "unknown" error. */
export interface ParseError {
  pos: number;
  messages: Message[];
}

/**
 * The reply of a parser: whether it consumed input, and its value (and where it stopped) or its error. One class
 * for successes and failures keeps every reply the same shape for the engine (it is built for each step).
 */
export class Reply<T> {
  constructor(
    readonly ok: boolean,
    readonly consumed: boolean,
    readonly value: T,
    readonly pos: number,
    readonly err: ParseError,
  ) {}
}

const success = <T>(consumed: boolean, value: T, pos: number, err: ParseError) =>
  new Reply<T>(true, consumed, value, pos, err);
// deno-lint-ignore no-explicit-any
const failure = (consumed: boolean, err: ParseError): Reply<any> =>
  new Reply(false, consumed, undefined, -1, err);

/** A parser over code points, from an index. */
export type Parser<T> = (input: readonly string[], pos: number) => Reply<T>;

/** Parsec's "unknown" error: no messages, so its position never decides a merge (one object serves all). */
const UNKNOWN: ParseError = Object.freeze({ pos: -1, messages: Object.freeze([]) as unknown as Message[] });
const unknown = (_pos: number): ParseError => UNKNOWN;

function merge(a: ParseError, b: ParseError): ParseError {
  if (b.messages.length === 0 && a.messages.length > 0) return a;
  if (a.messages.length === 0 && b.messages.length > 0) return b;
  if (a.pos === b.pos) return { pos: a.pos, messages: [...a.messages, ...b.messages] };
  return a.pos > b.pos ? a : b;
}

function expecting(err: ParseError, label: string): ParseError {
  return { pos: err.pos, messages: [{ kind: 2, text: label }, ...err.messages.filter((m) => m.kind !== 2)] };
}

const ASCII_NAMES = [
  "NUL",
  "SOH",
  "STX",
  "ETX",
  "EOT",
  "ENQ",
  "ACK",
  "a",
  "b",
  "t",
  "n",
  "v",
  "f",
  "r",
  "SO",
  "SI",
  "DLE",
  "DC1",
  "DC2",
  "DC3",
  "DC4",
  "NAK",
  "SYN",
  "ETB",
  "CAN",
  "EM",
  "SUB",
  "ESC",
  "FS",
  "GS",
  "RS",
  "US",
];

/** Haskell's `showLitChar`: how `show` writes one character inside quotes. */
function litChar(c: string, next?: string): string {
  const code = c.codePointAt(0)!;
  if (code > 127) return `\\${code}${next !== undefined && /[0-9]/.test(next) ? "\\&" : ""}`;
  if (code === 127) return "\\DEL";
  if (c === "\\") return "\\\\";
  if (code >= 32) return c;
  const name = ASCII_NAMES[code]!;
  return `\\${name}${name === "SO" && next === "H" ? "\\&" : ""}`;
}

/** Haskell's `show` of a String. */
export function showString(s: string): string {
  const cs = Array.from(s);
  return `"${cs.map((c, i) => c === '"' ? '\\"' : litChar(c, cs[i + 1])).join("")}"`;
}

/** Haskell's `show` of a Char. */
export function showChar(c: string): string {
  return c === "'" ? "'\\''" : `'${litChar(c)}'`;
}

/** Parsec's `showErrorMessages` with the English words, on one line (PostgREST joins the lines with spaces). */
export function describe(err: ParseError): string {
  const sorted = [...err.messages].sort((a, b) => a.kind - b.kind);
  const show = (m: Message) =>
    m.kind === 0 && m.text !== "" ? showString(m.text) : m.kind === 1 ? showChar(m.text) : m.text;
  const of = (kind: Kind) => sorted.filter((m) => m.kind === kind).map(show);
  const clean = (xs: string[]) => [...new Set(xs.filter((x) => x !== ""))];
  const commasOr = (xs: string[]) =>
    xs.length <= 1 ? (xs[0] ?? "") : `${xs.slice(0, -1).join(", ")} or ${xs.at(-1)}`;
  const many = (pre: string, xs: string[]) => {
    const c = clean(xs);
    return c.length === 0 ? "" : pre === "" ? commasOr(c) : `${pre} ${commasOr(c)}`;
  };
  if (sorted.length === 0) return "unknown parse error";
  const sys = of(0);
  const unexpected = of(1);
  const sysText = unexpected.length > 0 || sys.length === 0
    ? ""
    : `unexpected ${sys[0] === "" ? "end of input" : sys[0]}`;
  return clean([sysText, many("unexpected", unexpected), many("expecting", of(2)), many("", of(3))]).join(
    " ",
  );
}

/** Parsec's source position of an index: lines after `\n`, tab stops every 8 columns. */
export function lineColumn(input: readonly string[], pos: number): { line: number; column: number } {
  let line = 1;
  let column = 1;
  for (let i = 0; i < pos && i < input.length; i++) {
    const c = input[i];
    if (c === "\n") {
      line++;
      column = 1;
    } else if (c === "\t") column = column + 8 - ((column - 1) % 8);
    else column++;
  }
  return { line, column };
}

export const pure = <T>(value: T): Parser<T> => (_, pos) => success(false, value, pos, unknown(pos));

/** One code point that `test` accepts; unlabelled, as Parsec's `satisfy`. */
export const satisfy = (test: (c: string) => boolean): Parser<string> => (input, pos) => {
  const c = input[pos];
  if (c !== undefined && test(c)) return success(true, c, pos + 1, unknown(pos + 1));
  return failure(false, { pos, messages: [{ kind: 0, text: c ?? "" }] });
};

/** `p <?> label`: an empty failure (or an empty success's error) expects `label` instead. */
export const label = <T>(p: Parser<T>, text: string): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  if (r.consumed || (r.ok && r.err.messages.length === 0)) return r;
  return new Reply(r.ok, false, r.value, r.pos, expecting(r.err, text));
};

export const char = (c: string): Parser<string> => label(satisfy((x) => x === c), showString(c));
export const oneOf = (cs: string): Parser<string> => satisfy((x) => cs.includes(x));
export const noneOf = (cs: string): Parser<string> => satisfy((x) => !cs.includes(x));
export const anyChar: Parser<string> = satisfy(() => true);
const LETTER = /^\p{L}$/u;
export const letter: Parser<string> = label(satisfy((x) => LETTER.test(x)), "letter");
export const digit: Parser<string> = label(satisfy((x) => x >= "0" && x <= "9"), "digit");

/** Parsec's `string`: fails where the text starts, naming the first character that differs. */
export const string = (s: string): Parser<string> => {
  const want = Array.from(s);
  const shown = showString(s);
  return (input, pos) => {
    for (let i = 0; i < want.length; i++) {
      const c = input[pos + i];
      if (c !== want[i]) {
        return failure(i > 0, { pos, messages: [{ kind: 2, text: shown }, { kind: 0, text: c ?? "" }] });
      }
    }
    const end = pos + want.length;
    return success(want.length > 0, s, end, unknown(end));
  };
};

/** `try p`: a failure after consuming input counts as not consuming (its error stays where it was). */
export const attempt = <T>(p: Parser<T>): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  return !r.ok && r.consumed ? failure(false, r.err) : r;
};

/** `p <|> q <|> …`: the next alternative only while none has consumed input; empty errors merge. */
export const alt = <T>(...ps: Parser<T>[]): Parser<T> => (input, pos) => {
  let err = unknown(pos);
  for (const p of ps) {
    const r = p(input, pos);
    if (r.consumed) return r;
    err = merge(err, r.err);
    if (r.ok) return success(false, r.value, r.pos, err);
  }
  return failure(false, err);
};

/** `f <$> p` */
export const map = <A, B>(p: Parser<A>, f: (a: A) => B): Parser<B> => (input, pos) => {
  const r = p(input, pos);
  return r.ok ? success(r.consumed, f(r.value), r.pos, r.err) : r as unknown as Reply<B>;
};

/**
 * `do { a <- p1; b <- p2; … }` over parsers built once: the replies and errors of nested binds (an empty step's
 * error merges into the one before it), without building a continuation at each step.
 */
export function seq<T extends unknown[]>(...ps: { [K in keyof T]: Parser<T[K]> }): Parser<T> {
  return (input, pos) => {
    const values: unknown[] = [];
    let consumed = false;
    let at = pos;
    let err = unknown(pos);
    for (const p of ps as Parser<unknown>[]) {
      const r = p(input, at);
      err = r.consumed ? r.err : merge(err, r.err);
      consumed ||= r.consumed;
      if (!r.ok) return failure(consumed, err);
      values.push(r.value);
      at = r.pos;
    }
    return success(consumed, values as T, at, err);
  };
}

/** `do { x <- p; guard (ok x); return x }`: `guard False` fails with the unknown error, so `p`'s error stays. */
export const guarded = <T>(p: Parser<T>, ok: (value: T) => boolean): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  return !r.ok || ok(r.value) ? r : failure(r.consumed, r.err);
};

/** `p *> q` */
export const then = <A, B>(p: Parser<A>, q: Parser<B>): Parser<B> => map(seq(p, q), ([, b]) => b);
/** `p <* q` */
export const skip = <A, B>(p: Parser<A>, q: Parser<B>): Parser<A> => map(seq(p, q), ([a]) => a);

/** `many p`: the error of the attempt that stopped it is kept (Parsec's `manyAccum`). */
export const many = <T>(p: Parser<T>): Parser<T[]> => (input, pos) => {
  const values: T[] = [];
  let consumed = false;
  let at = pos;
  while (true) {
    const r = p(input, at);
    if (!r.ok) return r.consumed ? r as unknown as Reply<T[]> : success(consumed, values, at, r.err);
    if (!r.consumed) throw new TypeError("many: a parser that accepts empty input");
    values.push(r.value);
    at = r.pos;
    consumed = true;
  }
};

export const many1 = <T>(p: Parser<T>): Parser<T[]> => map(seq(p, many(p)), ([x, xs]) => [x, ...xs]);
export const option = <T>(fallback: T, p: Parser<T>): Parser<T> => alt(p, pure(fallback));
export const sepBy1 = <T, S>(p: Parser<T>, sep: Parser<S>): Parser<T[]> =>
  map(seq(p, many(then(sep, p))), ([x, xs]) => [x, ...xs]);
export const sepBy = <T, S>(p: Parser<T>, sep: Parser<S>): Parser<T[]> => option<T[]>([], sepBy1(p, sep));
export const between = <T>(open: Parser<unknown>, close: Parser<unknown>, p: Parser<T>): Parser<T> =>
  then(open, skip(p, close));

/** `lookAhead p`: succeeds without consuming; a consumed failure stays consumed, as in Parsec. */
export const lookAhead = <T>(p: Parser<T>): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  return r.ok ? success(false, r.value, pos, unknown(pos)) : r;
};

/**
 * `notFollowedBy p` for a one-character `p` (`try (do { c <- try p; unexpected (show c) } <|> return ())`): fails
 * after the character it names, consuming nothing; otherwise succeeds with `p`'s error.
 */
export const notFollowedBy = (p: Parser<string>): Parser<undefined> => (input, pos) => {
  const r = attempt(p)(input, pos);
  if (r.ok) return failure(false, { pos: r.pos, messages: [{ kind: 1, text: r.value }] });
  return success(false, undefined, pos, r.err);
};

/** `eof`: Parsec's `anyToken` does not advance the position, so the error is where the extra character is. */
export const eof: Parser<undefined> = (input, pos) => {
  const c = input[pos];
  if (c === undefined) {
    return success(false, undefined, pos, {
      pos,
      messages: [{ kind: 2, text: "end of input" }, { kind: 0, text: "" }],
    });
  }
  return failure(false, { pos, messages: [{ kind: 2, text: "end of input" }, { kind: 1, text: c }] });
};

/** A parser defined later (for recursive grammars). */
export const lazy = <T>(get: () => Parser<T>): Parser<T> => (input, pos) => get()(input, pos);

/** Runs `p` on `text` from its start; the rest of the text after what `p` reads is ignored, as `P.parse` does. */
export function run<T>(
  p: Parser<T>,
  text: string,
): { ok: true; value: T } | { ok: false; line: number; column: number; details: string } {
  const input = Array.from(text);
  const r = p(input, 0);
  if (r.ok) return { ok: true, value: r.value };
  return { ok: false, ...lineColumn(input, r.err.pos), details: describe(r.err) };
}
