/**
 * A small parser-combinator kernel with Parsec's error semantics (consumed/empty replies, `try`, labels, errors
 * merged at the furthest position). PostgREST parses its query string with Parsec and answers a failure with
 * Parsec's own text ("unexpected \"x\" expecting …" at "(line 1, column n)"); keeping the same semantics here is
 * what makes the grammar's messages match, not only its language.
 */

/** SysUnExpect, UnExpect, Expect, Message: Parsec sorts and shows the messages of an error in this order. */
type Kind = 0 | 1 | 2 | 3;

interface Message {
  kind: Kind;
  text: string;
}

/** An error at an index of the input; no messages is Parsec's "unknown" error. */
export interface ParseError {
  pos: number;
  messages: Message[];
}

/** The reply of a parser: whether it consumed input, and its value or error. */
export type Reply<T> =
  | { ok: true; consumed: boolean; value: T; pos: number; err: ParseError }
  | { ok: false; consumed: boolean; err: ParseError };

/** A parser over code points, from an index. */
export type Parser<T> = (input: readonly string[], pos: number) => Reply<T>;

const unknown = (pos: number): ParseError => ({ pos, messages: [] });

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
  const of = (kind: Kind) => sorted.filter((m) => m.kind === kind).map((m) => m.text);
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

export const pure = <T>(value: T): Parser<T> => (_, pos) => ({
  ok: true,
  consumed: false,
  value,
  pos,
  err: unknown(pos),
});

/** One code point that `test` accepts; unlabelled, as Parsec's `satisfy`. */
export const satisfy = (test: (c: string) => boolean): Parser<string> => (input, pos) => {
  const c = input[pos];
  if (c !== undefined && test(c)) {
    return { ok: true, consumed: true, value: c, pos: pos + 1, err: unknown(pos + 1) };
  }
  return {
    ok: false,
    consumed: false,
    err: { pos, messages: [{ kind: 0, text: c === undefined ? "" : showString(c) }] },
  };
};

/** `p <?> label`: an empty failure (or an empty success's error) expects `label` instead. */
export const label = <T>(p: Parser<T>, text: string): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  if (r.consumed) return r;
  if (!r.ok) return { ok: false, consumed: false, err: expecting(r.err, text) };
  return r.err.messages.length === 0 ? r : { ...r, err: expecting(r.err, text) };
};

export const char = (c: string): Parser<string> => label(satisfy((x) => x === c), showString(c));
export const oneOf = (cs: string): Parser<string> => satisfy((x) => cs.includes(x));
export const noneOf = (cs: string): Parser<string> => satisfy((x) => !cs.includes(x));
export const anyChar: Parser<string> = satisfy(() => true);
export const letter: Parser<string> = label(satisfy((x) => /^\p{L}$/u.test(x)), "letter");
export const digit: Parser<string> = label(satisfy((x) => x >= "0" && x <= "9"), "digit");

/** Parsec's `string`: fails where the text starts, naming the first character that differs. */
export const string = (s: string): Parser<string> => {
  const want = Array.from(s);
  return (input, pos) => {
    for (let i = 0; i < want.length; i++) {
      const c = input[pos + i];
      if (c !== want[i]) {
        const messages: Message[] = [
          { kind: 2, text: showString(s) },
          { kind: 0, text: c === undefined ? "" : showString(c) },
        ];
        return { ok: false, consumed: i > 0, err: { pos, messages } };
      }
    }
    const end = pos + want.length;
    return { ok: true, consumed: want.length > 0, value: s, pos: end, err: unknown(end) };
  };
};

/** `try p`: a failure after consuming input counts as not consuming (its error stays where it was). */
export const attempt = <T>(p: Parser<T>): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  return !r.ok && r.consumed ? { ok: false, consumed: false, err: r.err } : r;
};

/** `p <|> q <|> …`: the next alternative only while none has consumed input; empty errors merge. */
export const alt = <T>(...ps: Parser<T>[]): Parser<T> => (input, pos) => {
  let err = unknown(pos);
  for (const p of ps) {
    const r = p(input, pos);
    if (r.consumed) return r;
    err = merge(err, r.err);
    if (r.ok) return { ...r, err };
  }
  return { ok: false, consumed: false, err };
};

/** `p >>= f`, with Parsec's merge of an empty continuation's error into the first parser's. */
export const bind = <A, B>(p: Parser<A>, f: (a: A) => Parser<B>): Parser<B> => (input, pos) => {
  const r = p(input, pos);
  if (!r.ok) return r;
  const q = f(r.value)(input, r.pos);
  if (q.consumed) return q;
  const err = merge(r.err, q.err);
  return q.ok ? { ...q, consumed: r.consumed, err } : { ok: false, consumed: r.consumed, err };
};

export const map = <A, B>(p: Parser<A>, f: (a: A) => B): Parser<B> => bind(p, (a) => pure(f(a)));
/** `p *> q` */
export const then = <A, B>(p: Parser<A>, q: Parser<B>): Parser<B> => bind(p, () => q);
/** `p <* q` */
export const skip = <A, B>(p: Parser<A>, q: Parser<B>): Parser<A> => bind(p, (a) => map(q, () => a));

/** `many p`: the error of the attempt that stopped it is kept (Parsec's `manyAccum`). */
export const many = <T>(p: Parser<T>): Parser<T[]> => (input, pos) => {
  const values: T[] = [];
  let consumed = false;
  let at = pos;
  while (true) {
    const r = p(input, at);
    if (!r.ok) return r.consumed ? r : { ok: true, consumed, value: values, pos: at, err: r.err };
    if (!r.consumed) throw new TypeError("many: a parser that accepts empty input");
    values.push(r.value);
    at = r.pos;
    consumed = true;
  }
};

export const many1 = <T>(p: Parser<T>): Parser<T[]> => bind(p, (x) => map(many(p), (xs) => [x, ...xs]));
export const option = <T>(fallback: T, p: Parser<T>): Parser<T> => alt(p, pure(fallback));
export const sepBy1 = <T, S>(p: Parser<T>, sep: Parser<S>): Parser<T[]> =>
  bind(p, (x) => map(many(then(sep, p)), (xs) => [x, ...xs]));
export const between = <T>(open: Parser<unknown>, close: Parser<unknown>, p: Parser<T>): Parser<T> =>
  then(open, skip(p, close));

/** `lookAhead p`: succeeds without consuming; a consumed failure stays consumed, as in Parsec. */
export const lookAhead = <T>(p: Parser<T>): Parser<T> => (input, pos) => {
  const r = p(input, pos);
  return r.ok ? { ok: true, consumed: false, value: r.value, pos, err: unknown(pos) } : r;
};

const unexpected = (text: string): Parser<never> => (_, pos) => ({
  ok: false,
  consumed: false,
  err: { pos, messages: [{ kind: 1, text }] },
});

/** `notFollowedBy p` for a one-character `p`: fails after the character it names. */
export const notFollowedBy = (p: Parser<string>): Parser<undefined> =>
  attempt(alt(bind(attempt(p), (c) => unexpected(showChar(c))), pure(undefined)));

/** `eof`: Parsec's `anyToken` does not advance the position, so the error is where the extra character is. */
export const eof: Parser<undefined> = (input, pos) => {
  const c = input[pos];
  if (c === undefined) {
    return {
      ok: true,
      consumed: false,
      value: undefined,
      pos,
      err: { pos, messages: [{ kind: 2, text: "end of input" }, { kind: 0, text: "" }] },
    };
  }
  return {
    ok: false,
    consumed: false,
    err: { pos, messages: [{ kind: 2, text: "end of input" }, { kind: 1, text: showChar(c) }] },
  };
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
