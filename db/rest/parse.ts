import {
  type Aggregate,
  AGGREGATES,
  type Condition,
  type Field,
  type Filter,
  FTS_OPERATORS,
  type JsonStep,
  type Logic,
  type Node,
  type Operator,
  OPERATORS,
  type OrderTerm,
  type ParsedQuery,
  type SelectColumn,
  type SelectItem,
} from "./ast.ts";
import { restErrors } from "../../lib/rest_errors.ts";

/** The most elements an `in.(…)` or `{…}` list may have. */
export const MAX_LIST_ITEMS = 10_000;
/** The deepest nesting of embedded resources and of `and`/`or` trees. */
export const MAX_DEPTH = 16;
/**
 * The most items (columns and embeds, at every level) one `select=` may name: PostgreSQL refuses a target list
 * of more than 1664 entries (54011), which is the caller's doing, so the parser says so first.
 */
export const MAX_SELECT_ITEMS = 1000;

const QUANTIFIABLE = new Set<Operator>([
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
]);
const RESERVED = new Set(["select", "order", "limit", "offset", "or", "and", "columns", "on_conflict"]);
const CAST = /^[A-Za-z_][A-Za-z0-9_]*(\[\])?$/;
/** `.fn()` after a column: an aggregate (or a misspelt one, which the parser names). */
const CALL = /^\.([A-Za-z_][A-Za-z0-9_]*)\(\)/;

/** Parses a column with an optional JSON path: `name`, `"a name"`, `data->a->>b`, `arr->0`. */
export function parseField(text: string): Field {
  const parts = text.split(/(->>|->)/);
  let name = parts[0]!.trim();
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1);
  if (name === "") throw restErrors.parse(`failed to parse field (${text})`, "a column name is empty");
  const path: JsonStep[] = [];
  for (let i = 1; i < parts.length; i += 2) {
    const key = parts[i + 1]!;
    if (key === "") throw restErrors.parse(`failed to parse field (${text})`, "a JSON path key is empty");
    path.push({ op: parts[i] as JsonStep["op"], key: unquote(key) });
  }
  return { name, path };
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    return value.slice(1, -1).replace(/\\(.)/g, "$1");
  }
  return value;
}

/** Splits `text` at commas that are outside double quotes and parentheses. */
function splitTopLevel(text: string, what: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === "\\") i++;
      else if (ch === '"') quoted = false;
    } else if (ch === '"' && (i === 0 || ".,(".includes(text[i - 1]!))) quoted = true;
    else if (ch === "(") depth++;
    else if (ch === ")") {
      depth--;
      if (depth < 0) throw restErrors.parse(`failed to parse ${what}`, "unbalanced parentheses");
    } else if (ch === "," && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (quoted) throw restErrors.parse(`failed to parse ${what}`, "unterminated double quote");
  if (depth !== 0) throw restErrors.parse(`failed to parse ${what}`, "unbalanced parentheses");
  out.push(text.slice(start));
  return out;
}

/** Parses a list value: `(a,"b,c",d)` for `in`, `{a,b}` for `any`/`all`. */
export function parseList(text: string, open: "(" | "{", what: string): string[] {
  const close = open === "(" ? ")" : "}";
  if (!text.startsWith(open) || !text.endsWith(close)) {
    throw restErrors.parse(`failed to parse filter (${what})`, `a list must be written ${open}a,b${close}`);
  }
  const inner = text.slice(1, -1);
  if (inner.trim() === "") return [];
  const items: string[] = [];
  let current = "";
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i]!;
    if (quoted) {
      if (ch === "\\" && i + 1 < inner.length) current += inner[++i];
      else if (ch === '"') quoted = false;
      else current += ch;
    } else if (ch === '"' && current.trim() === "" && !wasQuoted) {
      // A double quote opens a quoted element only at its start: x"y is the three characters x"y.
      current = "";
      quoted = true;
      wasQuoted = true;
    } else if (ch === ",") {
      items.push(wasQuoted ? current : current.trim());
      current = "";
      wasQuoted = false;
      if (items.length > MAX_LIST_ITEMS) {
        throw restErrors.parse(
          `failed to parse filter (${what})`,
          `a list has more than ${MAX_LIST_ITEMS} items`,
        );
      }
    } else current += ch;
  }
  if (quoted) throw restErrors.parse(`failed to parse filter (${what})`, "unterminated double quote");
  items.push(wasQuoted ? current : current.trim());
  return items;
}

/** Parses the right side of a filter: `[not.]op[(any|all|lang)].value`. */
export function parseFilter(field: Field, raw: string, inLogic = false): Filter {
  let rest = raw;
  let negate = false;
  if (rest.startsWith("not.")) {
    negate = true;
    rest = rest.slice(4);
  }
  const m = /^([a-z]+)(?:\(([^)]*)\))?\.([\s\S]*)$/.exec(rest);
  if (!m) {
    throw restErrors.parse(`failed to parse filter (${raw})`, "expected an operator and a value: op.value");
  }
  const op = m[1] as Operator;
  const modifier = m[2];
  let value: string | string[] = m[3]!;
  if (!(OPERATORS as readonly string[]).includes(op)) {
    throw restErrors.parse(`failed to parse filter (${raw})`, `unknown operator "${op}"`);
  }
  const filter: Filter = { kind: "filter", field, negate, op, value };
  if (modifier !== undefined) {
    if (FTS_OPERATORS.has(op)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(modifier)) {
        throw restErrors.parse(`failed to parse filter (${raw})`, "a text search configuration is a name");
      }
      filter.language = modifier;
    } else if ((modifier === "any" || modifier === "all") && QUANTIFIABLE.has(op)) {
      filter.quantifier = modifier;
      filter.value = parseList(value, "{", raw);
      return filter;
    } else {
      throw restErrors.parse(`failed to parse filter (${raw})`, `"${op}" takes no modifier "${modifier}"`);
    }
  }
  if (op === "in") {
    filter.value = parseList(value, "(", raw);
    return filter;
  }
  if (op === "is") {
    value = value.toLowerCase();
    if (!["null", "not_null", "true", "false", "unknown"].includes(value)) {
      throw restErrors.parse(
        `failed to parse filter (${raw})`,
        "is takes one of null, not_null, true, false, unknown",
      );
    }
  }
  filter.value = inLogic ? unquote(value) : value;
  return filter;
}

/** Parses a logic tree value `(a.eq.1,or(b.gt.2,c.is.null))`. */
export function parseLogic(op: "and" | "or", negate: boolean, raw: string, depth = 0): Logic {
  if (depth > MAX_DEPTH) throw restErrors.parse(`failed to parse logic tree (${raw})`, "nested too deeply");
  const text = raw.trim();
  if (!text.startsWith("(") || !text.endsWith(")")) {
    throw restErrors.parse(`failed to parse logic tree (${raw})`, `expected ${op}=(…)`);
  }
  const inner = text.slice(1, -1);
  const parts = splitTopLevel(inner, `logic tree (${raw})`);
  const children: Condition[] = [];
  for (const part of parts) {
    const item = part.trim();
    if (item === "") {
      throw restErrors.parse(`failed to parse logic tree (${raw})`, "an empty condition");
    }
    const nested = /^(not\.)?(and|or)(\([\s\S]*\))$/.exec(item);
    if (nested) {
      children.push(parseLogic(nested[2] as "and" | "or", nested[1] !== undefined, nested[3]!, depth + 1));
      continue;
    }
    const arrow = item.indexOf("->");
    const dot = item.indexOf(".", arrow >= 0 ? item.lastIndexOf("->") : 0);
    if (dot <= 0) {
      throw restErrors.parse(`failed to parse logic tree (${raw})`, `expected field.op.value in "${item}"`);
    }
    children.push(parseFilter(parseField(item.slice(0, dot)), item.slice(dot + 1), true));
  }
  return { kind: "logic", op, negate, children };
}

/** Parses `order=a.desc.nullslast,b`. */
export function parseOrder(raw: string): OrderTerm[] {
  return splitTopLevel(raw, `order (${raw})`).map((term) => {
    const t = term.trim();
    const lastArrow = Math.max(t.lastIndexOf("->"), t.lastIndexOf(")"));
    const firstDot = t.indexOf(".", lastArrow >= 0 ? lastArrow : 0);
    const fieldText = firstDot < 0 ? t : t.slice(0, firstDot);
    const mods = firstDot < 0 ? [] : t.slice(firstDot + 1).split(".");
    const related = /^([^()]+)\(([^()]+)\)$/.exec(fieldText);
    const out: OrderTerm = related
      ? { embed: related[1]!.trim(), field: parseField(related[2]!) }
      : { field: parseField(fieldText) };
    for (const mod of mods) {
      if (mod === "asc" || mod === "desc") out.direction = mod;
      else if (mod === "nullsfirst") out.nulls = "first";
      else if (mod === "nullslast") out.nulls = "last";
      else throw restErrors.parse(`failed to parse order (${raw})`, `unexpected "${mod}"`);
    }
    return out;
  });
}

function parseCount(name: string, raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) {
    throw restErrors.parse(`failed to parse ${name} (${raw})`, "expected an integer ≥ 0");
  }
  return Number(raw);
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
    if (this.i < this.s.length) this.fail(`unexpected "${this.s[this.i]}"`);
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
      if (",()!:".includes(ch) || /\s/.test(ch) || this.s.startsWith("->", this.i) || this.callAt()) break;
      this.i++;
    }
    if (this.i === start) this.fail(`expected a name at position ${start}`);
    return this.s.slice(start, this.i);
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
    const path: JsonStep[] = [];
    while (this.s.startsWith("->", this.i)) {
      const op = this.s.startsWith("->>", this.i) ? "->>" : "->";
      this.i += op.length;
      const start = this.i;
      while (this.i < this.s.length) {
        const ch = this.s[this.i]!;
        if (",()".includes(ch) || this.s.startsWith("->", this.i) || this.s.startsWith("::", this.i)) break;
        if (this.callAt()) break;
        this.i++;
      }
      const key = this.s.slice(start, this.i);
      if (key === "") this.fail("an empty JSON path key");
      path.push({ op, key: unquote(key) });
    }
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

/** Parses a whole query string (PostgREST grammar) into a {@linkcode ParsedQuery}. */
export function parseQuery(params: URLSearchParams): ParsedQuery {
  const out: ParsedQuery = {
    select: [{ kind: "star" }],
    explicitSelect: false,
    nodes: new Map([["", { conditions: [], order: [] }]]),
  };
  for (const [key, value] of params) {
    if (key.includes("\0") || value.includes("\0")) {
      throw restErrors.parse(
        `failed to parse parameter (${key})`,
        "a NUL character cannot reach the database",
      );
    }
    if (key === "select") {
      out.select = parseSelect(value);
      out.explicitSelect = true;
      continue;
    }
    if (key === "columns") {
      out.columns = splitTopLevel(value, `columns (${value})`).map((c) => unquote(c.trim()));
      if (out.columns.some((c) => c === "")) throw restErrors.parse(`failed to parse columns (${value})`);
      continue;
    }
    if (key === "on_conflict") {
      out.onConflict = splitTopLevel(value, `on_conflict (${value})`).map((c) => unquote(c.trim()));
      if (out.onConflict.some((c) => c === "")) {
        throw restErrors.parse(`failed to parse on_conflict (${value})`);
      }
      continue;
    }
    const arrow = key.indexOf("->");
    const head = arrow >= 0 ? key.slice(0, arrow) : key;
    const tail = arrow >= 0 ? key.slice(arrow) : "";
    const segments = head.split(".");
    if (segments.some((s) => s === "")) throw restErrors.parse(`failed to parse filter key (${key})`);
    const last = segments[segments.length - 1]!;
    if (tail === "" && RESERVED.has(last)) {
      let prefix = segments.slice(0, -1);
      let negate = false;
      if ((last === "or" || last === "and") && prefix[prefix.length - 1] === "not") {
        negate = true;
        prefix = prefix.slice(0, -1);
      }
      const target = node(out.nodes, prefix.join("."));
      if (last === "order") target.order.push(...parseOrder(value));
      else if (last === "limit") target.limit = parseCount("limit", value);
      else if (last === "offset") target.offset = parseCount("offset", value);
      else if (last === "or" || last === "and") target.conditions.push(parseLogic(last, negate, value));
      else {throw restErrors.parse(
          `failed to parse filter key (${key})`,
          `"${last}" applies to the root only`,
        );}
      continue;
    }
    const target = node(out.nodes, segments.slice(0, -1).join("."));
    target.conditions.push(parseFilter(parseField(last + tail), value));
  }
  return out;
}
