/**
 * PostgREST's query-string grammar (filters, logic trees, order, tree paths, column lists), rule for rule as its
 * Parsec parser writes it, so that what is accepted, what is ignored after a valid prefix and what each failure
 * says are the same. `select=` has its own rules (select_grammar.ts), built on the ones exported here.
 */
import type { Field, JsonStep, Operator, OrderTerm } from "./ast.ts";
import {
  alt,
  anyChar,
  attempt,
  between,
  char,
  digit,
  eof,
  label,
  lazy,
  letter,
  lookAhead,
  many,
  many1,
  map,
  noneOf,
  notFollowedBy,
  oneOf,
  option,
  type Parser,
  pure,
  sepBy1,
  seq,
  skip,
  string,
  then,
} from "./parsec.ts";

/** An operator expression: what follows `col=` (or `col.` inside a logic tree). */
export interface OpExpr {
  negate: boolean;
  op: Operator;
  quantifier?: "any" | "all";
  language?: string;
  value: string | string[];
}

/** A logic tree as parsed, before it becomes the AST's Logic. */
export type Tree =
  | { kind: "filter"; field: Field; expr: OpExpr }
  | { kind: "logic"; op: "and" | "or"; negate: boolean; children: Tree[] };

const join = (cs: string[]) => cs.join("");
const ws = many(oneOf(" \t"));
/** `ws *> p <* ws`: blanks (spaces and tabs only) around `p`. */
export const lexeme = <T>(p: Parser<T>): Parser<T> => then(ws, skip(p, ws));

/** Haskell's `isSpace` (what `T.strip` drops): JavaScript's `trim` also drops U+2028, U+2029 and U+FEFF. */
const BLANKS =
  /^[\t-\r \xa0\u1680\u2000-\u200a\u202f\u205f\u3000]+|[\t-\r \xa0\u1680\u2000-\u200a\u202f\u205f\u3000]+$/g;
const strip = (cs: string[]) => join(cs).replace(BLANKS, "");

/** `"…"` with `\x` escapes. */
export const quotedValue: Parser<string> = map(
  then(char('"'), skip(many(alt(noneOf('\\"'), then(char("\\"), anyChar))), char('"'))),
  join,
);

/** Letters, digits, `_`, `$` and spaces, stripped: a cast's type name, a text search language. */
export const identifier: Parser<string> = map(many1(alt(letter, digit, oneOf("_ $"))), strip);
const dash = map(attempt(skip(char("-"), notFollowedBy(char(">")))), () => "-");
const sepByDash = (p: Parser<string>) => map(sepBy1(p, dash), (xs) => xs.join("-"));

export const fieldName: Parser<string> = label(
  alt(quotedValue, sepByDash(identifier)),
  "field name (* or [a..z0..9_$])",
);

const jsonKeyName = label(
  alt(quotedValue, sepByDash(map(many1(noneOf("(-:.,>)")), strip))),
  "any non reserved character different from: .,>()",
);

const jsonEnd = alt(
  attempt(lookAhead(string("->"))),
  attempt(lookAhead(string("::"))),
  attempt(lookAhead(string("."))),
  attempt(lookAhead(string(","))),
  attempt(eof),
);

const jsonIndex = map(seq(option("+", char("-")), many1(digit), jsonEnd), ([sign, ds]) => sign + join(ds));

const jsonOperand = alt<{ key: string; index: boolean }>(
  map(attempt(jsonIndex), (i) => ({ key: i.startsWith("+") ? i.slice(1) : i, index: true })),
  map(attempt(jsonKeyName), (key) => ({ key, index: false })),
);

const jsonArrow = alt(
  map(attempt(string("->>")), () => "->>" as const),
  map(attempt(string("->")), () => "->" as const),
);

/** `->a->>0`: the JSON path after a column. */
export const jsonPath: Parser<JsonStep[]> = many(
  map(seq(jsonArrow, jsonOperand), ([op, { key, index }]) => ({ op, key, index })),
);

/** A column and its JSON path, blanks around. */
export const field: Parser<Field> = lexeme(
  map(seq(fieldName, option<JsonStep[]>([], jsonPath)), ([name, path]) => ({ name, path })),
);

const delimiter = label(char("."), "delimiter (.)");

/** A filter key: `a.b.col->x`, embedded path then column. */
export const treePath: Parser<{ embed: string[]; field: Field }> = map(
  seq(sepBy1(fieldName, delimiter), option<JsonStep[]>([], jsonPath)),
  ([names, path]) => ({ embed: names.slice(0, -1), field: { name: names.at(-1)!, path } }),
);

/** A key ending in `and`/`or`: its embedded path (without `not`) and the operator (`not.or`…). */
export const logicPath: Parser<{ embed: string[]; op: string }> = map(
  sepBy1(fieldName, delimiter),
  (path) => {
    const op = path.at(-1)!;
    return {
      embed: path.slice(0, -1).filter((s) => s !== "not"),
      op: path.includes("not") ? `not.${op}` : op,
    };
  },
);

/** `columns=` and `on_conflict=`. */
export const columns: Parser<string[]> = sepBy1(fieldName, lexeme(char(",")));

const tryWord = <const T>(word: string, value: T) => map(attempt(string(word)), () => value);

const simpleOperator = label(
  alt(...(["neq", "cs", "cd", "ov", "sl", "sr", "nxr", "nxl", "adj"] as const).map((op) => tryWord(op, op))),
  "unknown single value operator",
);

const quantOperator = label(
  alt(
    ...(["eq", "gte", "gt", "lte", "lt", "like", "ilike", "match", "imatch"] as const).map((op) =>
      tryWord(op, op)
    ),
  ),
  "unknown single value operator",
);

const ciString = (word: string): Parser<string> =>
  map(seq(...Array.from(word).map((c) => alt(char(c), char(c.toUpperCase())))), join);

const isValue = label(
  alt(...["null", "not_null", "true", "false", "unknown"].map((w) => map(attempt(ciString(w)), () => w))),
  "isVal: (null, not_null, true, false, unknown)",
);

const listElement = alt(
  attempt(skip(quotedValue, notFollowedBy(noneOf(",)")))),
  map(many(noneOf(",)")), join),
);

/** `(a,"b,c")`: the list of `in`. */
export const listValue: Parser<string[]> = then(
  lexeme(char("(")),
  skip(sepBy1(listElement, char(",")), lexeme(char(")"))),
);

/** The value of a top-level filter: the rest of the text, as is. */
export const singleValue: Parser<string> = map(many(anyChar), join);

/** The value of a filter inside a logic tree: a quoted value, a `{…}` array, or text up to `,` or `)`. */
export const logicValue: Parser<string> = alt(
  attempt(skip(quotedValue, notFollowedBy(noneOf(",)")))),
  attempt(map(seq(char("{"), many(noneOf("{}")), char("}")), ([, body]) => `{${join(body)}}`)),
  map(many(noneOf(",)")), join),
);

const negation = alt(map(attempt(then(string("not"), delimiter)), () => true), pure(false));
const ftsOperator = alt(
  tryWord("fts", "fts"),
  tryWord("plfts", "plfts"),
  tryWord("phfts", "phfts"),
  tryWord("wfts", "wfts"),
);
const language = option<string | undefined>(undefined, attempt(between(char("("), char(")"), identifier)));
const quantifier = option<"any" | "all" | undefined>(
  undefined,
  attempt(
    between(
      char("("),
      char(")"),
      alt(tryWord("any", "any" as const), map(string("all"), () => "all" as const)),
    ),
  ),
);

/** `[not.]op[(any|all)|(lang)].value` */
export function opExpr(value: Parser<string>): Parser<OpExpr> {
  const after = (word: string) => attempt(then(string(word), delimiter));
  const operation: Parser<Omit<OpExpr, "negate">> = label(
    alt<Omit<OpExpr, "negate">>(
      map(then(after("in"), listValue), (list) => ({ op: "in", value: list })),
      map(then(after("is"), isValue), (v) => ({ op: "is", value: v })),
      map(then(after("isdistinct"), value), (v) => ({ op: "isdistinct", value: v })),
      attempt(
        map(
          seq(ftsOperator, language, delimiter, value),
          ([op, lang, , v]) => lang === undefined ? { op, value: v } : { op, language: lang, value: v },
        ),
      ),
      attempt(map(seq(simpleOperator, delimiter, value), ([op, , v]) => ({ op, value: v }))),
      attempt(
        map(
          seq(quantOperator, quantifier, delimiter, value),
          ([op, q, , v]) => q === undefined ? { op, value: v } : { op, quantifier: q, value: v },
        ),
      ),
    ),
    "operator (eq, gt, ...)",
  );
  return map(seq(negation, operation), ([negate, o]) => ({ negate, ...o }));
}

const notPrefix = label(
  alt(map(attempt(then(string("not"), delimiter)), () => true), pure(false)),
  "negation operator (not)",
);
const logicOp = label(
  alt(map(attempt(string("and")), () => "and" as const), map(string("or"), () => "or" as const)),
  "logic operator (and, or)",
);

const logicFilter = opExpr(logicValue);
const logicChildren = then(
  lexeme(char("(")),
  skip(sepBy1(lazy(() => logicTree), lexeme(char(","))), lexeme(char(")"))),
);

/** `or(a.eq.1,not.and(b.gt.2,c.is.null))`: the operator comes first, as PostgREST prefixes it to the value. */
export const logicTree: Parser<Tree> = alt<Tree>(
  map(attempt(seq(field, delimiter, logicFilter)), ([f, , expr]) => ({ kind: "filter", field: f, expr })),
  map(
    seq(notPrefix, logicOp, logicChildren),
    ([negate, op, children]) => ({ kind: "logic", op, negate, children }),
  ),
);

const orderDirection = alt(
  attempt(then(delimiter, map(string("asc"), () => "asc" as const))),
  attempt(then(delimiter, map(string("desc"), () => "desc" as const))),
);
const orderNulls = alt(
  attempt(then(delimiter, map(string("nullsfirst"), () => "first" as const))),
  attempt(then(delimiter, map(string("nullslast"), () => "last" as const))),
);
const orderEnd = alt(attempt(lookAhead(char(","))), attempt(eof));

const orderTail = seq(
  option<"asc" | "desc" | undefined>(undefined, orderDirection),
  alt<"first" | "last" | undefined>(
    skip(option<"first" | "last" | undefined>(undefined, orderNulls), orderEnd),
    map(orderEnd, () => undefined),
  ),
);

function orderTerm(
  base: Pick<OrderTerm, "field" | "embed">,
  direction?: "asc" | "desc",
  nulls?: "first" | "last",
) {
  const term: OrderTerm = { ...base };
  if (direction) term.direction = direction;
  if (nulls) term.nulls = nulls;
  return term;
}

/** `order=a.desc.nullslast,author(name).asc` */
export const order: Parser<OrderTerm[]> = sepBy1(
  lexeme(
    alt(
      attempt(
        map(
          seq(fieldName, between(char("("), char(")"), field), orderTail),
          ([embed, f, [direction, nulls]]) => orderTerm({ embed, field: f }, direction, nulls),
        ),
      ),
      map(seq(field, orderTail), ([f, [direction, nulls]]) => orderTerm({ field: f }, direction, nulls)),
    ),
  ),
  char(","),
);
