/**
 * PostgREST's query-string grammar (filters, logic trees, order, tree paths, column lists), rule for rule as its
 * Parsec parser writes it, so that what is accepted, what is ignored after a valid prefix and what each failure
 * says are the same. `select=` has its own parser (parse.ts).
 */
import type { Field, JsonStep, Operator, OrderTerm } from "./ast.ts";
import {
  alt,
  anyChar,
  attempt,
  between,
  bind,
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
const lexeme = <T>(p: Parser<T>): Parser<T> => then(ws, skip(p, ws));

/** `"…"` with `\x` escapes. */
export const quotedValue: Parser<string> = map(
  then(char('"'), skip(many(alt(noneOf('\\"'), then(char("\\"), anyChar))), char('"'))),
  join,
);

const identifier = map(many1(alt(letter, digit, oneOf("_ $"))), (cs) => join(cs).trim());
const dash = map(attempt(skip(char("-"), notFollowedBy(char(">")))), () => "-");
const sepByDash = (p: Parser<string>) => map(sepBy1(p, dash), (xs) => xs.join("-"));

export const fieldName: Parser<string> = label(
  alt(quotedValue, sepByDash(identifier)),
  "field name (* or [a..z0..9_$])",
);

const jsonKeyName = label(
  alt(quotedValue, sepByDash(map(many1(noneOf("(-:.,>)")), (cs) => join(cs).trim()))),
  "any non reserved character different from: .,>()",
);

const jsonEnd = alt(
  attempt(lookAhead(string("->"))),
  attempt(lookAhead(string("::"))),
  attempt(lookAhead(string("."))),
  attempt(lookAhead(string(","))),
  attempt(eof),
);

const jsonIndex = skip(
  bind(option("+", char("-")), (sign) => map(many1(digit), (ds) => sign + join(ds))),
  jsonEnd,
);

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
  bind(jsonArrow, (op) => map(jsonOperand, ({ key, index }) => ({ op, key, index }))),
);

const field: Parser<Field> = lexeme(
  bind(fieldName, (name) => map(option([], jsonPath), (path) => ({ name, path }))),
);

const delimiter = label(char("."), "delimiter (.)");

/** A filter key: `a.b.col->x`, embedded path then column. */
export const treePath: Parser<{ embed: string[]; field: Field }> = bind(
  sepBy1(fieldName, delimiter),
  (names) =>
    map(
      option([], jsonPath),
      (path) => ({ embed: names.slice(0, -1), field: { name: names.at(-1)!, path } }),
    ),
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
  Array.from(word).reduceRight<Parser<string>>(
    (rest, c) => bind(alt(char(c), char(c.toUpperCase())), (x) => map(rest, (xs) => x + xs)),
    pure(""),
  );

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
  attempt(
    bind(char("{"), () => bind(many(noneOf("{}")), (body) => map(char("}"), () => `{${join(body)}}`))),
  ),
  map(many(noneOf(",)")), join),
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
        bind(
          alt(
            tryWord("fts", "fts"),
            tryWord("plfts", "plfts"),
            tryWord("phfts", "phfts"),
            tryWord("wfts", "wfts"),
          ),
          (op) =>
            bind(
              option<string | undefined>(undefined, attempt(between(char("("), char(")"), identifier))),
              (language) =>
                then(
                  delimiter,
                  map(value, (v) => language === undefined ? { op, value: v } : { op, language, value: v }),
                ),
            ),
        ),
      ),
      attempt(bind(simpleOperator, (op) => then(delimiter, map(value, (v) => ({ op, value: v }))))),
      attempt(bind(quantOperator, (op) =>
        bind(
          option<"any" | "all" | undefined>(
            undefined,
            attempt(between(
              char("("),
              char(")"),
              alt(tryWord("any", "any" as const), map(string("all"), () => "all" as const)),
            )),
          ),
          (quantifier) =>
            then(
              delimiter,
              map(value, (v) => quantifier === undefined ? { op, value: v } : { op, quantifier, value: v }),
            ),
        ))),
    ),
    "operator (eq, gt, ...)",
  );
  return bind(
    alt(map(attempt(then(string("not"), delimiter)), () => true), pure(false)),
    (negate) => map(operation, (o) => ({ negate, ...o })),
  );
}

const notPrefix = label(
  alt(map(attempt(then(string("not"), delimiter)), () => true), pure(false)),
  "negation operator (not)",
);
const logicOp = label(
  alt(map(attempt(string("and")), () => "and" as const), map(string("or"), () => "or" as const)),
  "logic operator (and, or)",
);

/** `or(a.eq.1,not.and(b.gt.2,c.is.null))`: the operator comes first, as PostgREST prefixes it to the value. */
export const logicTree: Parser<Tree> = alt<Tree>(
  map(
    attempt(bind(field, (f) => then(delimiter, map(opExpr(logicValue), (expr) => ({ f, expr }))))),
    ({ f, expr }) => ({ kind: "filter", field: f, expr }),
  ),
  bind(notPrefix, (negate) =>
    bind(logicOp, (op) =>
      map(
        then(lexeme(char("(")), skip(sepBy1(lazy(() => logicTree), lexeme(char(","))), lexeme(char(")")))),
        (children): Tree => ({ kind: "logic", op, negate, children }),
      ))),
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

function orderTail(base: Pick<OrderTerm, "field" | "embed">): Parser<OrderTerm> {
  return bind(option<"asc" | "desc" | undefined>(undefined, orderDirection), (direction) =>
    map(
      alt<"first" | "last" | undefined>(
        skip(option<"first" | "last" | undefined>(undefined, orderNulls), orderEnd),
        map(orderEnd, () => undefined),
      ),
      (nulls) => {
        const term: OrderTerm = { ...base };
        if (direction) term.direction = direction;
        if (nulls) term.nulls = nulls;
        return term;
      },
    ));
}

/** `order=a.desc.nullslast,author(name).asc` */
export const order: Parser<OrderTerm[]> = sepBy1(
  lexeme(
    alt(
      attempt(
        bind(
          fieldName,
          (embed) => bind(between(char("("), char(")"), field), (f) => orderTail({ embed, field: f })),
        ),
      ),
      bind(field, (f) => orderTail({ field: f })),
    ),
  ),
  char(","),
);
