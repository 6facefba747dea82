import {
  type Aggregate,
  AGGREGATES,
  type Condition,
  type Field,
  type Filter,
  type JsonStep,
  type Node,
  type OrderTerm,
  type ParsedQuery,
  type SelectColumn,
  type SelectItem,
} from "./ast.ts";
import { restErrors } from "../../lib/rest_errors.ts";
import { describe, lineColumn, type Parser, run } from "./parsec.ts";
import {
  columns,
  jsonPath,
  logicPath,
  logicTree,
  logicValue,
  type OpExpr,
  opExpr,
  order,
  singleValue,
  type Tree,
  treePath,
} from "./grammar.ts";
import {
  fastColumns,
  fastLogicPath,
  fastLogicTree,
  fastOpExpr,
  fastOrder,
  fastTreePath,
} from "./fast_grammar.ts";

/** The most elements an `in.(…)` list may have (`{…}` arrays are PostgreSQL's to read). */
export const MAX_LIST_ITEMS = 10_000;
/** The deepest nesting of embedded resources and of `and`/`or` trees. */
export const MAX_DEPTH = 16;
/**
 * The most items (columns and embeds, at every level) one `select=` may name: PostgreSQL refuses a target list
 * of more than 1664 entries (54011), which is the caller's doing, so the parser says so first.
 */
export const MAX_SELECT_ITEMS = 1000;

const CAST = /^[A-Za-z_][A-Za-z0-9_]*(\[\])?$/;
/** `.fn()` after a column: an aggregate (or a misspelt one, which the parser names). */
const CALL = /^\.([A-Za-z_][A-Za-z0-9_]*)\(\)/;

/**
 * Runs one rule of the grammar; a failure is PGRST100 with Parsec's position and wording, as PostgREST. `fast`
 * reads the usual shapes of the text to the same value much quicker; what it leaves (undefined), the grammar reads.
 */
function parse<T>(rule: Parser<T>, text: string, source: string, fast?: (text: string) => T | undefined): T {
  const quick = fast?.(text);
  if (quick !== undefined) return quick;
  let r;
  try {
    r = run(rule, text);
  } catch (err) {
    // Only a logic tree recurses; one nested past the engine's stack is refused, never a 500.
    if (err instanceof RangeError) throw restErrors.parse(`"${source}"`, "nested too deeply");
    throw err;
  }
  if (r.ok) return r.value;
  throw restErrors.parse(`"${source}" (line ${r.line}, column ${r.column})`, r.details);
}

/** Parses a filter key's column with an optional JSON path: `name`, `"a name"`, `data->a->>b`, `arr->0`. */
export function parseField(text: string): Field {
  return parse(treePath, text, `failed to parse tree path (${text})`, fastTreePath).field;
}

/** Parses the list of `in`: `(a,"b,c",d)`; PostgREST reads `()` and `("")` alike as the empty list. */
export function parseList(text: string): string[] {
  return parseFilter({ name: "in", path: [] }, `in.${text}`).value as string[];
}

function toFilter(field: Field, e: OpExpr): Filter {
  const filter: Filter = { kind: "filter", field, negate: e.negate, op: e.op, value: e.value };
  if (e.quantifier) filter.quantifier = e.quantifier;
  if (e.language !== undefined) filter.language = e.language;
  if (e.op === "in") {
    const items = e.value as string[];
    filter.value = items.length === 1 && items[0] === "" ? [] : items;
  }
  if (Array.isArray(filter.value) && filter.value.length > MAX_LIST_ITEMS) {
    throw restErrors.parse(
      `failed to parse filter (${field.name})`,
      `a list has more than ${MAX_LIST_ITEMS} items`,
    );
  }
  return filter;
}

const TOP_FILTER = opExpr(singleValue);
const LOGIC_FILTER = opExpr(logicValue);

/** Parses the right side of a filter: `[not.]op[(any|all)|(lang)].value`. */
export function parseFilter(field: Field, raw: string, inLogic = false): Filter {
  const expr = fastOpExpr(raw, !inLogic) ??
    parse(inLogic ? LOGIC_FILTER : TOP_FILTER, raw, `failed to parse filter (${raw})`);
  return toFilter(field, expr);
}

function toCondition(tree: Tree, depth: number, raw: string): Condition {
  if (tree.kind === "filter") return toFilter(tree.field, tree.expr);
  if (depth > MAX_DEPTH) throw restErrors.parse(`failed to parse logic tree (${raw})`, "nested too deeply");
  return {
    kind: "logic",
    op: tree.op,
    negate: tree.negate,
    children: tree.children.map((c) => toCondition(c, depth + 1, raw)),
  };
}

/**
 * Parses a logic tree value `(a.eq.1,or(b.gt.2,c.is.null))`. PostgREST parses the operator and the value as one
 * text (`or(…)`), so its columns count the operator too.
 */
export function parseLogic(op: "and" | "or", negate: boolean, raw: string): Condition {
  const tree = fastLogicTree(op, negate, raw) ??
    parse(logicTree, `${negate ? "not." : ""}${op}${raw}`, `failed to parse logic tree (${raw})`);
  // `or=a.eq.1` reads as the filter `ora.eq.1` there too: the operator and the value are one text.
  return toCondition(tree, 0, raw);
}

/** Parses `order=a.desc.nullslast,author(name),b`. */
export function parseOrder(raw: string): OrderTerm[] {
  return parse(order, raw, `failed to parse order (${raw})`, fastOrder);
}

/** Parses a `select=` value into a tree of items. */
export function parseSelect(raw: string): SelectItem[] {
  return new SelectParser(raw).parse();
}

class SelectParser {
  private i = 0;
  private count = 0;
  constructor(private readonly s: string) {}

  parse(): SelectItem[] {
    const items = this.items(0);
    // PostgREST's parser reads a valid prefix: after an embed's `)` the rest is ignored (`a(b)'`), after a
    // column it must end (its field parser looks for `,`, `)` or the end).
    if (this.i < this.s.length && items.at(-1)?.kind !== "embed") this.fail(`unexpected "${this.s[this.i]}"`);
    return items;
  }

  private fail(details: string): never {
    throw restErrors.parse(`failed to parse select parameter (${this.s})`, details);
  }

  private ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }

  private items(depth: number): SelectItem[] {
    if (depth > MAX_DEPTH) this.fail("embedded resources are nested too deeply");
    const items: SelectItem[] = [];
    this.ws();
    if (this.i >= this.s.length || this.s[this.i] === ")") return items;
    while (true) {
      if (++this.count > MAX_SELECT_ITEMS) this.fail(`more than ${MAX_SELECT_ITEMS} columns and embeds`);
      items.push(this.item(depth));
      this.ws();
      if (this.s[this.i] === ",") {
        this.i++;
        continue;
      }
      return items;
    }
  }

  private name(): string {
    this.ws();
    if (this.s[this.i] === '"') {
      const end = this.s.indexOf('"', this.i + 1);
      if (end < 0) this.fail("unterminated double quote");
      const name = this.s.slice(this.i + 1, end);
      this.i = end + 1;
      if (name === "") this.fail("an empty name");
      return name;
    }
    const start = this.i;
    while (this.i < this.s.length) {
      const ch = this.s[this.i]!;
      if (",()!:".includes(ch) || this.s.startsWith("->", this.i) || this.callAt()) break;
      this.i++;
    }
    // Blanks inside a name are part of it (`Just A Server Model`), as PostgREST's field names; around it, not.
    const name = this.s.slice(start, this.i).trimEnd();
    if (name === "") this.fail(`expected a name at position ${start}`);
    return name;
  }

  private item(depth: number): SelectItem {
    this.ws();
    if (this.s[this.i] === "*") {
      this.i++;
      return { kind: "star" };
    }
    let spread = false;
    if (this.s.startsWith("...", this.i)) {
      spread = true;
      this.i += 3;
    }
    let alias: string | undefined;
    let name = this.name();
    if (this.s[this.i] === ":" && this.s[this.i + 1] !== ":") {
      this.i++;
      alias = name;
      name = this.name();
    }
    if (name === "count" && this.s.startsWith("()", this.i) && !spread) {
      // `count()`: the rows of the group, as PostgREST reads it (a resource named count cannot be embedded empty).
      this.i += 2;
      const column: SelectColumn = {
        kind: "column",
        field: { name: "*", path: [] },
        alias,
        aggregate: "count",
      };
      if (this.s.startsWith("::", this.i)) {
        this.i += 2;
        column.aggregateCast = this.cast();
      }
      return column;
    }
    if (name === "count" && !spread && this.s[this.i] === "(") {
      this.fail("count takes no argument: count(), or column.count()");
    }
    if (this.s[this.i] === "!" || this.s[this.i] === "(") {
      let hint: string | undefined;
      let join: "left" | "inner" = "left";
      while (this.s[this.i] === "!") {
        this.i++;
        const h = this.name();
        if (h === "inner" || h === "left") join = h;
        else if (hint === undefined) hint = h;
        else this.fail(`a second hint "${h}"`);
      }
      if (this.s[this.i] !== "(") this.fail(`expected "(" after "${name}"`);
      this.i++;
      const select = this.items(depth + 1);
      this.ws();
      if (this.s[this.i] !== ")") this.fail(`expected ")" to close "${name}("`);
      this.i++;
      return { kind: "embed", name, alias, hint, join, spread, select };
    }
    if (spread) this.fail(`"...${name}" must embed a resource: ...${name}(columns)`);
    const path = this.s.startsWith("->", this.i) ? this.jsonPath() : [];
    let cast: string | undefined;
    if (this.s.startsWith("::", this.i)) {
      this.i += 2;
      cast = this.cast();
    }
    const column: SelectColumn = { kind: "column", field: { name, path }, alias, cast };
    if (this.s[this.i] === ".") {
      column.aggregate = this.aggregate();
      if (this.s.startsWith("::", this.i)) {
        this.i += 2;
        column.aggregateCast = this.cast();
      }
    }
    return column;
  }

  /**
   * Reads `->a->>0…` with the grammar's own rule (PostgREST's `pJsonPath`): a key ends at any of `(-:.,>)`, an
   * index is digits followed by `->`, `::`, `.`, `,` or the end, and a failure says what Parsec says, where.
   */
  private jsonPath(): JsonStep[] {
    const input = Array.from(this.s);
    const r = jsonPath(input, Array.from(this.s.slice(0, this.i)).length);
    if (!r.ok) {
      const { line, column } = lineColumn(input, r.err.pos);
      throw restErrors.parse(
        `"failed to parse select parameter (${this.s})" (line ${line}, column ${column})`,
        describe(r.err),
      );
    }
    this.i = input.slice(0, r.pos).join("").length;
    return r.value;
  }

  /** True at `.fn()`, where a column name, JSON key or cast ends. */
  private callAt(): boolean {
    return this.s[this.i] === "." && CALL.test(this.s.slice(this.i, this.i + 64));
  }

  /** Reads a type name after `::`. */
  private cast(): string {
    const start = this.i;
    while (this.i < this.s.length && !",()".includes(this.s[this.i]!) && !this.callAt()) this.i++;
    const cast = this.s.slice(start, this.i).trim();
    if (!CAST.test(cast)) this.fail(`"${cast}" is not a type name`);
    return cast;
  }

  /** Reads `.fn()`: one of the aggregate functions. */
  private aggregate(): Aggregate {
    const m = CALL.exec(this.s.slice(this.i, this.i + 64));
    if (!m) this.fail(`unexpected "." at position ${this.i}`);
    const fn = m[1] as Aggregate;
    if (!AGGREGATES.includes(fn)) {
      this.fail(`"${m[1]}" is not an aggregate function (${AGGREGATES.join(", ")})`);
    }
    this.i += m[0].length;
    return fn;
  }
}

function node(nodes: Map<string, Node>, path: string): Node {
  let n = nodes.get(path);
  if (!n) {
    n = { conditions: [], order: [] };
    nodes.set(path, n);
  }
  return n;
}

/**
 * A `limit`/`offset` value as PostgREST reads it (Haskell's `readMaybe`): an integer, blanks around allowed;
 * anything else is ignored, as there. Beyond a safe integer it is clamped, which selects the same rows.
 */
function parseCount(raw: string): number | undefined {
  const m = /^\s*(-?\d+)\s*$/.exec(raw);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, n));
}

const EMBEDDABLE = new Set(["order", "limit", "offset", "and", "or"]);

/**
 * Parses a whole query string (PostgREST grammar) into a {@linkcode ParsedQuery}. The parameters are read in
 * PostgREST's order (order, logic trees, columns, select, filters, on_conflict, then limit and offset), so the
 * first error reported is the one PostgREST reports.
 */
export function parseQuery(params: URLSearchParams): ParsedQuery {
  const out: ParsedQuery = {
    select: [{ kind: "star" }],
    explicitSelect: false,
    nodes: new Map([["", { conditions: [], order: [] }]]),
  };
  const entries = [...params];
  const of = (kind: string) => entries.filter(([key]) => classify(key) === kind);
  for (const [key, value] of entries) {
    if (key.includes("\0") || value.includes("\0")) {
      throw restErrors.parse(
        `failed to parse parameter (${key})`,
        "a NUL character cannot reach the database",
      );
    }
  }
  const ordered = new Set<string>();
  for (const [key, value] of of("order")) {
    const path = treePathOf(key);
    const terms = parseOrder(value);
    // PostgREST applies the first `order` of a resource.
    if (ordered.has(path)) continue;
    ordered.add(path);
    node(out.nodes, path).order.push(...terms);
  }
  for (const [key, value] of of("logic")) {
    const { embed, op } = parse(logicPath, key, `failed to parse logic path (${key})`, fastLogicPath);
    const negate = op.startsWith("not.");
    const name = (negate ? op.slice(4) : op) as "and" | "or";
    node(out.nodes, embed.join(".")).conditions.push(parseLogic(name, negate, value));
  }
  const columnsValue = params.get("columns");
  if (columnsValue !== null) {
    out.columns = parse(
      columns,
      columnsValue,
      `failed to parse columns parameter (${columnsValue})`,
      fastColumns,
    );
  }
  const select = params.get("select");
  if (select !== null) {
    const items = parseSelect(select);
    // An empty root `select=` is every column, as PostgREST reads it (an empty embed `a()` is not).
    if (items.length > 0) out.select = items;
    out.explicitSelect = true;
  }
  for (const [key, value] of of("filter")) {
    const path = parse(treePath, key, `failed to parse tree path (${key})`, fastTreePath);
    const filter = parseFilter(path.field, value);
    node(out.nodes, path.embed.join(".")).conditions.push(filter);
  }
  const onConflict = params.get("on_conflict");
  if (onConflict !== null) {
    out.onConflict = parse(
      columns,
      onConflict,
      `failed to parse on_conflict parameter (${onConflict})`,
      fastColumns,
    );
  }
  for (const [key, value] of of("range")) {
    const target = node(out.nodes, treePathOf(key));
    const n = parseCount(value);
    if (n === undefined) continue;
    if (key.endsWith("limit")) target.limit = n;
    else target.offset = n;
  }
  const root = out.nodes.get("")!;
  if (root.limit !== undefined && root.limit < 0) {
    throw restErrors.negativeLimit();
  }
  return out;
}

/** What a key is, by its last `.` segment as PostgREST tells it. */
function classify(key: string): "select" | "order" | "logic" | "range" | "filter" | "other" {
  if (key === "select" || key === "columns" || key === "on_conflict") return "other";
  const last = key.split(".").at(-1)!;
  if (!EMBEDDABLE.has(last)) return "filter";
  return last === "order" ? "order" : last === "and" || last === "or" ? "logic" : "range";
}

/** The embedded path of an `order`/`limit`/`offset` key (`a.b.order` → `a.b`). */
function treePathOf(key: string): string {
  return parse(treePath, key, `failed to parse tree path (${key})`, fastTreePath).embed.join(".");
}
