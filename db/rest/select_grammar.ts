/**
 * PostgREST's `select=` grammar (`pFieldForest` and the rules under it), rule for rule as its Parsec parser
 * writes it, so that what is accepted, the prefix read before the rest is ignored (`id)`, `a(b)x`, `,id`) and
 * each failure's text are the same. The platform's own limits (nesting, number of items) are checked as it
 * reads: passing one throws {@linkcode SelectLimit} out of the parser.
 */
import type { Aggregate, Field, SelectColumn, SelectItem } from "./ast.ts";
import {
  alt,
  attempt,
  between,
  char,
  eof,
  guarded,
  lazy,
  lookAhead,
  map,
  notFollowedBy,
  option,
  type Parser,
  run,
  sepBy,
  seq,
  skip,
  string,
  then,
} from "./parsec.ts";
import { field, fieldName, identifier, lexeme } from "./grammar.ts";

/** Thrown while reading when the select nests deeper, or names more items, than the limits allow. */
export class SelectLimit extends Error {
  constructor(readonly limit: "depth" | "items") {
    super(`select= past its ${limit} limit`);
  }
}

/** The limits of the text being read (one parse at a time: the grammar is synchronous). */
const budget = { depth: 0, items: 0, maxDepth: 0, maxItems: 0 };

type Join = "left" | "inner";
interface Head {
  name: string;
  alias?: string;
  hint?: string;
  join?: Join;
}

const optional = <T>(p: Parser<T>) => option<T | undefined>(undefined, p);

const aliasSeparator = seq(char(":"), notFollowedBy(char(":")));
const alias = optional(attempt(skip(fieldName, aliasSeparator)));
const cast = optional(then(string("::"), identifier));
const openAhead = attempt(lookAhead(string("(")));
const itemEnd = alt(attempt(lookAhead(string(")"))), attempt(lookAhead(string(","))), attempt(eof));

const embedParam = then(
  char("!"),
  alt<{ hint?: string; join?: Join }>(
    attempt(map(string("left"), () => ({ join: "left" }))),
    attempt(map(string("inner"), () => ({ join: "inner" }))),
    attempt(map(fieldName, (hint) => ({ hint }))),
  ),
);

/** Up to two `!` parameters; the first hint and the first join type win. */
const embedParams = map(
  seq(optional(embedParam), optional(embedParam)),
  ([a, b]) => ({ hint: a?.hint ?? b?.hint, join: a?.join ?? b?.join }),
);

/** `[alias:]name[!hint][!inner]` before `(`; a resource cannot be named `count`. */
const relation: Parser<Head> = lexeme(
  map(
    seq(alias, guarded(fieldName, (name) => name !== "count"), embedParams, openAhead),
    ([a, name, params]) => ({ name, alias: a, ...params }),
  ),
);

/** `...name[!hint][!inner]` before `(`. */
const spread: Parser<Head> = lexeme(
  map(seq(string("..."), fieldName, embedParams, openAhead), ([, name, params]) => ({ name, ...params })),
);

const aggregation = alt<Aggregate>(
  map(string("sum"), () => "sum"),
  map(string("avg"), () => "avg"),
  map(string("count"), () => "count"),
  map(attempt(string("max")), () => "max"),
  map(attempt(string("min")), () => "min"),
);
const aggregate = optional(attempt(map(seq(char("."), aggregation, string("()")), ([, fn]) => fn)));

function column(
  f: Field,
  as: string | undefined,
  type: string | undefined,
  fn: Aggregate | undefined,
  fnType: string | undefined,
): SelectItem {
  // A quoted `"*"` alone is the same tree as `*`.
  if (
    f.name === "*" && !f.path.length && as === undefined && type === undefined && !fn && fnType === undefined
  ) {
    return { kind: "star" };
  }
  const item: SelectColumn = { kind: "column", field: f, alias: as, cast: type };
  if (fn) item.aggregate = fn;
  if (fnType !== undefined) item.aggregateCast = fnType;
  return item;
}

function countAll(as: string | undefined, fnType: string | undefined): SelectItem {
  const item: SelectColumn = {
    kind: "column",
    field: { name: "*", path: [] },
    alias: as,
    aggregate: "count",
  };
  if (fnType !== undefined) item.aggregateCast = fnType;
  return item;
}

/** `*`, `[alias:]count()[::type]`, or `[alias:]field[::type][.agg()][::type]`, then `)`, `,` or the end. */
const fieldSelect: Parser<SelectItem> = lexeme(
  alt(
    attempt(map(seq(string("*"), itemEnd), (): SelectItem => ({ kind: "star" }))),
    attempt(map(seq(alias, string("count()"), cast, itemEnd), ([as, , fnType]) => countAll(as, fnType))),
    map(
      seq(alias, field, cast, aggregate, cast, itemEnd),
      ([as, f, type, fn, fnType]) => column(f, as, type, fn, fnType),
    ),
  ),
);

/** The forest one level deeper, within the depth limit. */
const deeper: Parser<SelectItem[]> = (input, pos) => {
  if (++budget.depth > budget.maxDepth) throw new SelectLimit("depth");
  try {
    return forest(input, pos);
  } finally {
    budget.depth--;
  }
};
const children = between(char("("), char(")"), lazy(() => deeper));

const embed = (head: Head, spread: boolean, select: SelectItem[]): SelectItem => ({
  kind: "embed",
  name: head.name,
  alias: head.alias,
  hint: head.hint,
  join: head.join ?? "left",
  spread,
  select,
});

const fieldTree: Parser<SelectItem> = guarded(
  alt(
    map(seq(attempt(spread), children), ([head, select]) => embed(head, true, select)),
    map(seq(attempt(relation), children), ([head, select]) => embed(head, false, select)),
    fieldSelect,
  ),
  () => {
    if (++budget.items > budget.maxItems) throw new SelectLimit("items");
    return true;
  },
);

const forest: Parser<SelectItem[]> = sepBy(fieldTree, lexeme(char(",")));

/** Reads a `select=` value as PostgREST does; the text after the longest valid prefix is ignored. */
export function readSelect(text: string, limits: { maxDepth: number; maxItems: number }) {
  budget.depth = 0;
  budget.items = 0;
  budget.maxDepth = limits.maxDepth;
  budget.maxItems = limits.maxItems;
  return run(forest, text);
}
