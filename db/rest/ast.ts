/** The typed AST of a PostgREST request, produced by parse.ts and turned into SQL by compile.ts. */

/** One step of a JSON path: `->key` (json) or `->>key` (text). */
export interface JsonStep {
  op: "->" | "->>";
  key: string;
  /** `->0`, `->-1`: an array index (a quoted `->"0"` is a key). Unset: a key of digits is an index. */
  index?: boolean;
}

/** A column, optionally followed by a JSON path (`data->a->>b`). */
export interface Field {
  name: string;
  path: JsonStep[];
}

/** The aggregate functions `select=` may apply (PostgREST's set). */
export const AGGREGATES = ["count", "sum", "avg", "max", "min"] as const;

/** An aggregate function of `select=`. */
export type Aggregate = typeof AGGREGATES[number];

/**
 * `col`, `alias:col`, `col::type`, `data->a->>b`, and aggregates: `col.sum()`, `col::int.sum()::text`, `count()`
 * (whose field is `*`).
 */
export interface SelectColumn {
  kind: "column";
  field: Field;
  alias?: string;
  /** The cast of the column, applied before an aggregate. */
  cast?: string;
  aggregate?: Aggregate;
  /** The cast of the aggregate's result. */
  aggregateCast?: string;
}

/** `*`: every column. */
export interface SelectStar {
  kind: "star";
}

/** `alias:table!hint!inner(select…)` or `...table(select…)`: a resource embedded through a foreign key. */
export interface SelectEmbed {
  kind: "embed";
  name: string;
  alias?: string;
  hint?: string;
  join: "left" | "inner";
  spread: boolean;
  select: SelectItem[];
}

/** One item of `select=`. */
export type SelectItem = SelectColumn | SelectStar | SelectEmbed;

/** Every filter operator of PostgREST. */
export const OPERATORS = [
  "eq",
  "neq",
  "gt",
  "gte",
  "lt",
  "lte",
  "like",
  "ilike",
  "match",
  "imatch",
  "in",
  "is",
  "isdistinct",
  "fts",
  "plfts",
  "phfts",
  "wfts",
  "cs",
  "cd",
  "ov",
  "sl",
  "sr",
  "nxr",
  "nxl",
  "adj",
] as const;

/** A filter operator. */
export type Operator = typeof OPERATORS[number];

/** The full-text operators, which take an optional language: `fts(english).cat`. */
export const FTS_OPERATORS: ReadonlySet<string> = new Set<Operator>(["fts", "plfts", "phfts", "wfts"]);

/** `col=[not.]op[(any|all)|(lang)].value`. */
export interface Filter {
  kind: "filter";
  field: Field;
  negate: boolean;
  op: Operator;
  /** `any`/`all` for eq, gt, gte, lt, lte, like, ilike, match, imatch: the value is an array literal `{a,b}`. */
  quantifier?: "any" | "all";
  /** The text search configuration of fts, plfts, phfts, wfts. */
  language?: string;
  /** The raw value (`is`: null, not_null, true, false or unknown), or the parsed list of `in`. */
  value: string | string[];
}

/** `[not.]and=(…)` / `[not.]or=(…)`, nested. */
export interface Logic {
  kind: "logic";
  op: "and" | "or";
  negate: boolean;
  children: Condition[];
}

/** A condition of a WHERE clause. */
export type Condition = Filter | Logic;

/** One key of `order=`. */
export interface OrderTerm {
  field: Field;
  /** `order=authors(name)`: a column of an embedded to-one resource. */
  embed?: string;
  direction?: "asc" | "desc";
  nulls?: "first" | "last";
}

/** Filters, order and paging of the root resource or of one embedded resource. */
export interface Node {
  conditions: Condition[];
  order: OrderTerm[];
  limit?: number;
  offset?: number;
}

/** An embedded path (`a.b` as `["a", "b"]`) named by a parameter of one kind. */
export interface Move {
  kind: "filter" | "order" | "range" | "logic";
  path: string[];
}

/** A parsed query string: the select tree, and a node per resource path ("" is the root, "a.b" embedded). */
export interface ParsedQuery {
  select: SelectItem[];
  /** True when the query string had a `select=`. */
  explicitSelect: boolean;
  nodes: Map<string, Node>;
  /**
   * The embedded paths the parameters name, in the order PostgREST applies them to its plan (filters, orders,
   * ranges, logic trees; each kind from its last parameter to its first): each finds the first embed of that
   * name or alias and moves it to the front, which decides where its params go and where it is in the output.
   */
  moves: Move[];
  /** `columns=` of an insert. */
  columns?: string[];
  /** `on_conflict=` of an upsert. */
  onConflict?: string[];
}
