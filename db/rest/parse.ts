import type { Condition, Field, Filter, Move, Node, OrderTerm, ParsedQuery, SelectItem } from "./ast.ts";
import { restErrors } from "../../lib/rest_errors.ts";
import { type Parser, run } from "./parsec.ts";
import {
  columns,
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
import { fastSelect } from "./fast_select.ts";
import { readSelect, SelectLimit } from "./select_grammar.ts";
import { checkCasts } from "./select_casts.ts";

/** The most elements an `in.(…)` list may have (`{…}` arrays are PostgreSQL's to read). */
export const MAX_LIST_ITEMS = 10_000;
/** The deepest nesting of embedded resources and of `and`/`or` trees. */
export const MAX_DEPTH = 16;
/**
 * The most items (columns and embeds, at every level) one `select=` may name: PostgreSQL refuses a target list
 * of more than 1664 entries (54011), which is the caller's doing, so the parser says so first.
 */
export const MAX_SELECT_ITEMS = 1000;

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

/**
 * Parses a `select=` value into a tree of items, as PostgREST v14 does (what it accepts, the prefix it reads,
 * each failure's text), within the platform's limits; a cast must also be a plain type name (select_casts.ts).
 */
export function parseSelect(raw: string): SelectItem[] {
  const items = fastSelect(raw, MAX_SELECT_ITEMS, MAX_DEPTH) ?? readSelectOrThrow(raw);
  checkCasts(items, raw);
  return items;
}

function readSelectOrThrow(raw: string): SelectItem[] {
  const source = `failed to parse select parameter (${raw})`;
  let r;
  try {
    r = readSelect(raw, { maxDepth: MAX_DEPTH, maxItems: MAX_SELECT_ITEMS });
  } catch (err) {
    if (!(err instanceof SelectLimit)) throw err;
    throw restErrors.parse(
      source,
      err.limit === "depth"
        ? "embedded resources are nested too deeply"
        : `more than ${MAX_SELECT_ITEMS} columns and embeds`,
    );
  }
  if (r.ok) return r.value;
  throw restErrors.parse(`"${source}" (line ${r.line}, column ${r.column})`, r.details);
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
    moves: [],
  };
  const moves: Record<Move["kind"], string[][]> = { filter: [], order: [], range: [], logic: [] };
  const moved = (kind: Move["kind"], path: string) => {
    if (path !== "") moves[kind].push(path.split("."));
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
    moved("order", path);
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
    moved("logic", embed.join("."));
  }
  const columnsValue = params.get("columns");
  if (columnsValue !== null) {
    // A set, as PostgREST reads it: a name given twice is one column.
    out.columns = [
      ...new Set(parse(
        columns,
        columnsValue,
        `failed to parse columns parameter (${columnsValue})`,
        fastColumns,
      )),
    ];
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
    moved("filter", path.embed.join("."));
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
    const path = treePathOf(key);
    const target = node(out.nodes, path);
    // One range per path, as PostgREST keeps them (limit and offset together).
    if (!moves.range.some((p) => p.join(".") === path)) moved("range", path);
    const n = parseCount(value);
    if (n === undefined) continue;
    if (key.endsWith("limit")) target.limit = n;
    else target.offset = n;
  }
  for (const kind of ["filter", "order", "range", "logic"] as const) {
    for (const path of moves[kind].reverse()) out.moves.push({ kind, path });
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
