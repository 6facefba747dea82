import { quoteIdent } from "../driver.ts";
import type {
  Aggregate,
  Condition,
  Field,
  Filter,
  Node,
  OrderTerm,
  ParsedQuery,
  SelectColumn,
  SelectEmbed,
  SelectItem,
} from "./ast.ts";
import { FuzzySet } from "../../lib/fuzzy.ts";
import { RestError, restErrors } from "../../lib/rest_errors.ts";
import { type EmbedPlacement, placeEmbedParams } from "./embed_params.ts";
import { type Relationship, resolveRelationship } from "./relationships.ts";
import type { ColumnInfo, FunctionInfo, MediaHandler, SchemaCache, TableInfo } from "./schema.ts";

/** The select list and path of the resource whose conditions are compiled. */
interface Level {
  select: SelectItem[];
  path: string;
  /** The level's rows are read (a page, an embed), not counted or tested for existence. */
  joined?: boolean;
}

/** One parameterized SQL statement: the only thing the data API sends to the database for a request. */
export interface Statement {
  sql: string;
  params: unknown[];
  /**
   * The relation behind each alias the SQL gives (`_0` → `books`, `_1` → `authors_1`), as PostgREST's SQL names
   * them: a database error that names an alias is told with these names.
   */
  names?: ReadonlyMap<string, string>;
}

/** Options of a read. */
export interface ReadOptions {
  /** Add the exact count of matching rows (`total`). */
  count: boolean;
  /** Count at most this many (PostgREST's `count=estimated` counts up to max-rows + 1). */
  countUpTo?: number;
  /** The cap on rows (max rows of the configuration). */
  maxRows: number;
}

/**
 * The arguments of a function call: by name (an array of objects: one call each), the whole body as the one
 * json/jsonb parameter, or a raw text (bytea: `\x` hex) as the one unnamed text, xml or bytea parameter.
 */
export type CallArguments =
  | { kind: "named"; values: Record<string, unknown> }
  | { kind: "single"; value: unknown }
  | { kind: "raw"; value: string };

/** One item of a select list: its SQL, its output name (none for `alias.*`), and how it aggregates. */
interface Entry {
  sql: string;
  name: string | null;
  /** An aggregate of `sql` (`*` for `count()`), its result cast. */
  aggregate?: { fn: Aggregate; cast?: string };
  /** JSON of an embedded resource. */
  json?: boolean;
}

/** Whether a select list aggregates: an aggregate of its own, or in a to-one spread, which hoists it. */
function aggregates(select: SelectItem[]): boolean {
  return select.some((i) =>
    i.kind === "column" ? i.aggregate !== undefined : i.kind === "embed" && i.spread && aggregates(i.select)
  );
}

/** Whether a select list aggregates anywhere, embeds included. */
function usesAggregates(select: SelectItem[]): boolean {
  return select.some((i) =>
    i.kind === "column" ? i.aggregate !== undefined : i.kind === "embed" && usesAggregates(i.select)
  );
}

const aggregatesNotAllowed = () =>
  new RestError(400, "PGRST123", "Use of aggregate functions is not allowed");

/** How the rows of a read become the body: an array of objects, one object, an array of values, one value. */
type BodyShape = "rows" | "row" | "values" | "value";

/**
 * The type a call's argument is read as: PostgreSQL drops a parameter's length, so `character` and `bit` (which
 * alone mean length 1) are read as their varying types, as PostgREST's ppTypeMaxLength, and fit any length.
 */
function argumentType(type: string): string {
  return type.replace(/^(character|bit)(\[\])?$/, "$1 varying$2");
}

/**
 * The FROM item of a call, named `_f`. A scalar result is one column named after the function, as
 * `select * from fn()` names it; a record (no OUT parameters) has no columns to name, so it is called in a
 * select list, as PostgREST calls scalars: its one value is the row.
 */
function callSource(fn: FunctionInfo, invocation: string, scalar: boolean): string {
  const column = quoteIdent(fn.name);
  if (fn.result.udt === "record" && scalar) return `(select ${invocation} as ${column}) as "_f"`;
  return scalar ? `${invocation} as "_f"(${column})` : `${invocation} as "_f"`;
}

/** The result of a function as a table the compiler can filter, order and embed from. */
function resultTable(fn: FunctionInfo, cache: SchemaCache): TableInfo {
  // A table's rows: its columns' base types (a tsvector domain is searched as a tsvector).
  const table = fn.result.table === null ? undefined : cache.tables.get(fn.result.table);
  const withBase = (c: ColumnInfo): ColumnInfo => {
    const base = table?.columns.get(c.name)?.base;
    return base === undefined ? c : { ...c, base };
  };
  const columns = fn.result.kind === "composite" ? fn.result.columns.map(withBase) : [{
    name: fn.name,
    type: fn.result.type,
    udt: fn.result.udt,
    nullable: true,
    hasDefault: false,
    generated: false,
  }];
  return {
    // A function returning a table's rows embeds through that table's foreign keys.
    name: fn.result.table ?? fn.name,
    kind: "view",
    columns: new Map(columns.map((c) => [c.name, c])),
    primaryKey: [],
    uniques: [],
    insertable: false,
    updatable: false,
    deletable: false,
    // A table's rows take its computed fields, as PostgREST's `rpc/search?select=id,always_true`.
    computed: fn.result.table === null ? undefined : cache.tables.get(fn.result.table)?.computed,
  };
}

/** Options of an insert (POST). */
export interface InsertOptions {
  rows: Record<string, unknown>[];
  /** `Prefer: resolution=…` */
  resolution?: "merge-duplicates" | "ignore-duplicates";
  /** `Prefer: missing=default`: absent keys take the column default instead of null. */
  missingDefault: boolean;
  /** Build the JSON body of the returned rows. */
  representation: boolean;
  /** Compute the `Location` of the one inserted row (`Prefer: return=headers-only`). */
  location?: boolean;
}

/** Options of an update (PATCH) or a delete (DELETE). */
export interface MutateOptions {
  representation: boolean;
  /** Refuse a write without a filter (21000, as pg-safeupdate does). */
  requireFilter?: boolean;
  /** PATCH with `Prefer: missing=default`: a `columns=` key absent from the body takes its default. */
  missingDefault?: boolean;
}

const OPS: Record<string, string> = {
  eq: "=",
  neq: "<>",
  gt: ">",
  gte: ">=",
  lt: "<",
  lte: "<=",
  like: "like",
  ilike: "ilike",
  match: "~",
  imatch: "~*",
  cs: "@>",
  cd: "<@",
  ov: "&&",
  sl: "<<",
  sr: ">>",
  nxr: "&<",
  nxl: "&>",
  adj: "-|-",
};
const TEXT_OPS = new Set(["like", "ilike", "match", "imatch"]);
const TSQUERY: Record<string, string> = {
  fts: "to_tsquery",
  plfts: "plainto_tsquery",
  phfts: "phraseto_tsquery",
  wfts: "websearch_to_tsquery",
};

/**
 * The names of the columns a select list outputs, or undefined when it outputs every column of its table (`*`,
 * nothing listed) or spreads an embed's.
 */
function outputNames(select: SelectItem[]): Set<string> | undefined {
  if (select.length === 0) return undefined;
  const names = new Set<string>();
  for (const item of select) {
    if (item.kind === "star" || (item.kind === "embed" && item.spread)) return undefined;
    if (item.kind === "embed") names.add(item.alias ?? item.name);
    else {
      const last = item.field.path.at(-1);
      names.add(
        item.alias ?? (last && !last.index && !/^-?\d+$/.test(last.key) ? last.key : item.field.name),
      );
      if (item.aggregate) names.add(item.alias ?? item.aggregate);
    }
  }
  return names;
}

/** A PostgreSQL array literal of text elements, every element quoted. */
export function arrayLiteral(items: string[]): string {
  return `{${items.map((i) => `"${i.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
}

/**
 * PostgREST's `text/csv` body: the first row's keys joined by commas, a line feed, then one line per row as
 * PostgreSQL prints the record without its parentheses (null empty, booleans `t`/`f`, quoted when needed).
 */
const CSV_AGGREGATE =
  "coalesce(array_to_string(array(select json_object_keys((array_agg(row_to_json(_t)))[1])), ','), '')" +
  " || chr(10) || coalesce(string_agg(substring(_t::text, 2, length(_t::text) - 2), chr(10)), '')";

function qualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * An embed that selects nothing, `table()`, or only such embeds, `a(b())`: PostgREST leaves it out of the
 * output, as an embed used only to filter.
 */
function isEmptyEmbed(e: SelectEmbed): boolean {
  return !e.spread && e.select.every((i) => i.kind === "embed" && isEmptyEmbed(i));
}

/**
 * Compiler turns a parsed request into one SQL statement over the schema cache. Every identifier is checked
 * against the cache and quoted; every value, JSON key and text search configuration is a `$n` parameter.
 */
export class Compiler {
  readonly params: unknown[] = [];
  private aliases = 0;
  /** `Accept: …;nulls=stripped`: leave null fields out of the rows (postgrest-js `stripNulls()`). */
  stripNulls = false;
  /** `Accept: text/csv`: the body is CSV text instead of JSON. */
  csv = false;
  /** Aggregates in `select=` (PostgREST's db-aggregates-enabled); off, they are 400 PGRST123. */
  aggregatesEnabled = false;
  /**
   * The media type handler that writes the body (PostgREST's Media Type Handlers): its aggregate over the rows,
   * or its domain over a function's value; the body is then its text (base64 of its bytes when `binary`).
   */
  handler?: MediaHandler;

  /** The relationship of each embed of the query, found once (the plan, then the SQL, ask for it). */
  private readonly relationships = new Map<SelectEmbed, Relationship>();

  private relationship(parent: TableInfo, e: SelectEmbed): Relationship {
    let rel = this.relationships.get(e);
    if (!rel) this.relationships.set(e, rel = resolveRelationship(this.cache, parent.name, e.name, e.hint));
    return rel;
  }

  /** The name PostgREST's SQL gives the relation behind each of this statement's aliases (in its errors). */
  private readonly shownNames = new Map<string, string>();

  /** The row cap of the read being compiled. */
  private maxRows?: number;
  constructor(private readonly cache: SchemaCache, private readonly query: ParsedQuery) {}

  /** The table info of `name`, or 404 PGRST205. */
  table(name: string): TableInfo {
    const info = this.cache.tables.get(name);
    if (!info) {
      // PostgREST's hint: the closest table or view name, when close enough.
      throw restErrors.unknownTable(
        name,
        this.cache.schema,
        new FuzzySet(this.cache.tables.keys()).getOne(name, 0.75),
      );
    }
    return info;
  }

  private param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** An embed's limit under the read's row cap (none outside a read). */
  private capped(limit: number | undefined): number | undefined {
    if (this.maxRows === undefined) return limit;
    return limit === undefined ? this.maxRows : Math.min(limit, this.maxRows);
  }

  /**
   * A row count (a page size) as a literal, the one value written into the SQL text: the planner then knows it,
   * so a prepared statement's generic plan is as cheap as a custom one and PostgreSQL stops planning the
   * statement at each request (a `limit $n` is planned for 10% of the table, so it never did). Only a
   * non-negative safe integer passes: the text is digits, nothing else.
   */
  private rowCount(value: number): string {
    if (!Number.isSafeInteger(value) || value < 0) throw new TypeError("a row count is an integer ≥ 0");
    return String(value);
  }

  private alias(): string {
    return quoteIdent(`_${this.aliases++}`);
  }

  /** The alias of the statement's own relation, which PostgREST's SQL calls by the relation's name. */
  private rootAlias(t: TableInfo): string {
    const alias = this.alias();
    this.shownNames.set(alias, t.name);
    return alias;
  }

  private node(path: string): Node {
    return this.embedNodes.get(path) ?? this.query.nodes.get(path) ?? { conditions: [], order: [] };
  }

  /** Where the parameters of embedded resources go (PostgREST's plan), found once per statement. */
  private placement?: EmbedPlacement;
  private placed(): EmbedPlacement {
    return this.placement ??= placeEmbedParams(this.query.select, this.query.moves);
  }

  /** The key of each embed's node (its filters, order and range, gathered from every path that named it). */
  private readonly embedKeys = new Map<SelectEmbed, string>();
  private readonly embedNodes = new Map<string, Node & { depth: number }>();
  /** The values each to-one spread's lateral join gives, by output name (`order=spread(name)` reads them). */
  private readonly spreadValues = new Map<SelectEmbed, Map<string, string>>();

  /**
   * A column of `t`; an unknown one is 42703 naming the relation as PostgREST's SQL calls it (`alias`'s name
   * there: an embedded table is `<table>_<depth>`, through a junction plain `<table>`).
   */
  private column(t: TableInfo, name: string, alias?: string): string {
    if (!t.columns.has(name)) {
      throw restErrors.unknownColumn((alias && this.shownNames.get(alias)) ?? t.name, name);
    }
    return quoteIdent(name);
  }

  private field(t: TableInfo, alias: string, f: Field): string {
    // A computed field is a function of the row: `fn(alias)`, as PostgreSQL reads `alias.fn`. The row is cast
    // to its table's type: a write's rows come from a CTE, a record, which an overloaded function cannot take.
    const computed = t.columns.has(f.name) ? undefined : t.computed?.get(f.name);
    let sql = computed
      ? `${qualified(this.cache.schema, computed.function)}(${alias}::${
        qualified(this.cache.schema, t.name)
      })`
      : `${alias}.${this.column(t, f.name, alias)}`;
    // An arrow on any other type than json(b) reads the value as jsonb, as PostgREST does: `numbers->0` indexes
    // an array, `location->>lat` reads a composite's field (a json(b) column is read as is, so its indexes serve).
    const udt = t.columns.get(f.name)?.udt;
    if (f.path.length > 0 && udt !== "json" && udt !== "jsonb") sql = `to_jsonb(${sql})`;
    for (const step of f.path) {
      const index = step.index ?? /^-?\d+$/.test(step.key);
      // A key is an untyped parameter, as PostgREST sends it: `->` resolves it to text on json(b), and an
      // operator of another type fails in PostgREST's words (`text -> unknown`).
      const key = index ? `${this.param(step.key)}::int` : this.param(step.key);
      sql = `(${sql}${step.op}${key})`;
    }
    return sql;
  }

  /**
   * The SQL type of a filter's left side: the column's catalog type, text after `->>`, json(b) after `->`.
   * Values are sent as text and cast to it (`$n::text::type`): the driver never re-encodes them by type
   * (postgres.js would JSON-encode a jsonb parameter and map any bool string but "true" to false).
   */
  private fieldType(t: TableInfo, f: Field): string {
    const col = t.columns.get(f.name) ?? t.computed!.get(f.name)!;
    const last = f.path.at(-1);
    if (!last) return col.type;
    // After `->`: json on a json column, else jsonb (`field` reads any other type as jsonb first).
    return last.op === "->>" ? "text" : t.columns.get(f.name)?.udt === "json" ? "json" : "jsonb";
  }

  private value(value: string, type: string): string {
    return `${this.param(value)}::text::${type}`;
  }

  private filter(t: TableInfo, alias: string, f: Filter): string {
    const lhs = this.field(t, alias, f.field);
    const fromText = f.field.path.length === 0 ? t.columns.get(f.field.name)?.fromText : undefined;
    // A domain with a cast from text reads filter values through it (PostgREST's domain representations).
    const type = fromText ? "text" : this.fieldType(t, f.field);
    const parse = (sql: string) => fromText ? `${fromText}(${sql})` : sql;
    let sql: string;
    const value = f.value;
    if (f.op === "in") {
      const list = this.value(arrayLiteral(value as string[]), `${type}[]`);
      sql = `${lhs} = any(${fromText ? `array(select ${parse("_v")} from unnest(${list}) _v)` : list})`;
    } else if (f.op === "is") {
      const word = value as string;
      sql = `${lhs} is ${word === "not_null" ? "not null" : word}`;
    } else if (f.op === "isdistinct") {
      sql = `${lhs} is distinct from ${parse(this.value(value as string, type))}`;
    } else if (f.op in TSQUERY) {
      const config = f.language ? `${this.param(f.language)}::text::regconfig, ` : "";
      // A tsvector (a column, a domain over one, a computed field) is searched as it is.
      const col = t.columns.get(f.field.name);
      const type = col ? col.base ?? col.udt : t.computed?.get(f.field.name)?.udt;
      const vector = f.field.path.length === 0 && type === "tsvector" ? lhs : `to_tsvector(${config}${lhs})`;
      sql = `${vector} @@ ${TSQUERY[f.op]}(${config}${this.param(value)}::text)`;
    } else {
      const op = OPS[f.op]!;
      const textual = TEXT_OPS.has(f.op);
      const fix = (v: string) => f.op === "like" || f.op === "ilike" ? v.replaceAll("*", "%") : v;
      if (f.quantifier) {
        // The value is an array literal that PostgreSQL reads, as PostgREST passes it (`*` is `%` for like).
        const array = this.value(fix(value as string), textual ? "text[]" : `${type}[]`);
        const values = fromText && !textual ? `array(select ${parse("_v")} from unnest(${array}) _v)` : array;
        sql = `${lhs} ${op} ${f.quantifier}(${values})`;
      } else {
        const v = fix(value as string);
        // A pattern is an untyped parameter, as PostgREST sends it (`integer ~~ unknown` when the column is no text).
        sql = `${lhs} ${op} ${textual ? this.param(v) : parse(this.value(v, type))}`;
      }
    }
    return f.negate ? `not (${sql})` : sql;
  }

  private condition(t: TableInfo, alias: string, c: Condition, level: Level): string {
    if (c.kind === "filter") return this.embedNull(t, alias, c, level) ?? this.filter(t, alias, c);
    if (c.children.length === 0) return c.negate ? "false" : "true";
    const inner = c.children.map((child) => this.condition(t, alias, child, level)).join(` ${c.op} `);
    return c.negate ? `not (${inner})` : `(${inner})`;
  }

  /** `embed=is.null` / `embed=not.is.null`: whether an embedded resource (with its filters) exists. */
  private embedNull(t: TableInfo, alias: string, f: Filter, level: Level): string | null {
    if (f.op !== "is" || f.field.path.length > 0 || t.columns.has(f.field.name)) return null;
    if (f.value !== "null" && f.value !== "not_null") return null;
    const e = level.select.find((i): i is SelectEmbed =>
      i.kind === "embed" && (i.alias ?? i.name) === f.field.name
    );
    if (!e) return null;
    const sub = this.embedFrom(t, alias, e, level.path);
    const exists = `exists (select 1 from ${sub.from} where ${sub.where.join(" and ")})`;
    if (!level.joined) {
      // Counted: `not.is.null` is a plain EXISTS, as PostgREST's count writes it, whose semi join the planner
      // estimates (`Prefer: count=planned`), not a negated subplan.
      return (f.value === "null") !== f.negate ? `not ${exists}` : exists;
    }
    // Read: PostgREST tests the embed's lateral row, a filter over the parent's rows that keeps their order;
    // the negated EXISTS stays such a filter (a plain one would be a semi join, which may reorder them).
    const sql = f.value === "null" ? `not ${exists}` : exists;
    return f.negate ? `not (${sql})` : sql;
  }

  private orderBy(t: TableInfo, alias: string, terms: OrderTerm[], level: Level): string {
    if (terms.length === 0) return "";
    const parts = terms.map((o) => {
      let sql: string;
      if (o.embed !== undefined) {
        // A column of an embedded to-one resource, read by a scalar subquery.
        const e = level.select.find((i): i is SelectEmbed =>
          i.kind === "embed" && (i.alias ?? i.name) === o.embed
        );
        if (!e) {
          throw restErrors.notEmbedded(o.embed);
        }
        const sub = this.embedFrom(t, alias, e, level.path);
        if (!sub.rel.toOne) {
          throw new RestError(400, "PGRST118", `A related order on '${o.embed}' is not possible`, {
            details: `'${t.name}' and '${o.embed}' do not form a many-to-one or one-to-one relationship`,
          });
        }
        // PostgREST orders by the embed's joined row, whose columns are what the embed selects, by their names.
        const selected = outputNames(e.select);
        if (selected && !selected.has(o.field.name)) {
          const lateral = `${t.name}_${e.alias ?? e.name}_${sub.depth}`;
          throw new RestError(400, "42703", `column ${lateral}.${o.field.name} does not exist`);
        }
        // A to-one spread's value as its join gives it, which a grouped list can order by (PostgREST's).
        const spread = o.field.path.length === 0 ? this.spreadValues.get(e)?.get(o.field.name) : undefined;
        // A name the embed gives (`supervisor:id`) is that column's.
        const named = e.select.find((i): i is SelectColumn =>
          i.kind === "column" && !i.aggregate && i.alias === o.field.name
        );
        const field = named ? { ...named.field, path: [...named.field.path, ...o.field.path] } : o.field;
        sql = spread ??
          `(select ${this.field(sub.target, sub.alias, field)} from ${sub.from} where ${
            sub.where.join(" and ")
          } limit 1)`;
      } else {
        sql = this.field(t, alias, o.field);
      }
      if (o.direction) sql += ` ${o.direction}`;
      if (o.nulls) sql += ` nulls ${o.nulls}`;
      return sql;
    });
    return ` order by ${parts.join(", ")}`;
  }

  /**
   * The key of an embedded resource's node: the parameters the paths naming it carry (every filter; the order and
   * the range of the one applied last), under a key no parameter can spell.
   */
  private embedPath(parentPath: string, e: SelectEmbed): string {
    let key = this.embedKeys.get(e);
    if (key !== undefined) return key;
    key = `\0${this.embedKeys.size}`;
    this.embedKeys.set(e, key);
    const params = this.placed().params.get(e);
    const nodeOf = (path?: string) => path === undefined ? undefined : this.query.nodes.get(path);
    const range = nodeOf(params?.range);
    this.embedNodes.set(key, {
      conditions: params?.paths.flatMap((p) => nodeOf(p)?.conditions ?? []) ?? [],
      order: nodeOf(params?.order)?.order ?? [],
      limit: range?.limit,
      offset: range?.offset,
      depth: parentPath === "" ? 1 : this.embedNodes.get(parentPath)!.depth + 1,
    });
    return key;
  }

  /**
   * The WHERE conditions of a resource: its filters and the `!inner` embeds that must exist. `joined`: the
   * statement reads the resource's rows, whose select list joins its `!inner` embeds (see `joinedEmbed`).
   */
  private where(t: TableInfo, alias: string, path: string, select: SelectItem[], joined = false): string[] {
    const parts = this.node(path).conditions.map((c) =>
      this.condition(t, alias, c, { select, path, joined })
    );
    for (const item of select) {
      if (joined || item.kind !== "embed" || item.join !== "inner") continue;
      const sub = this.embedFrom(t, alias, item, path);
      parts.push(`exists (select 1 from ${sub.from} where ${sub.where.join(" and ")})`);
    }
    return parts;
  }

  private embedFrom(
    parent: TableInfo,
    parentAlias: string,
    e: SelectEmbed,
    parentPath: string,
    joined = false,
  ) {
    const rel = this.relationship(parent, e);
    const target = this.table(rel.target);
    const alias = this.alias();
    const path = this.embedPath(parentPath, e);
    const depth = this.embedNodes.get(path)!.depth;
    this.shownNames.set(alias, rel.junction ? target.name : `${target.name}_${depth}`);
    let from = `${qualified(this.cache.schema, target.name)} ${alias}`;
    const where: string[] = [];
    if (rel.computed) {
      // The function's rows, called with the parent's row; `where` then needs no join condition.
      from = `${qualified(this.cache.schema, rel.computed)}(${parentAlias}::${
        qualified(this.cache.schema, parent.name)
      }) ${alias}`;
    } else if (rel.junction) {
      const j = this.table(rel.junction.table);
      const jAlias = this.alias();
      from += ` join ${qualified(this.cache.schema, j.name)} ${jAlias} on ${
        rel.junction.toTarget.map(([jc, tc]) => `${jAlias}.${quoteIdent(jc)} = ${alias}.${quoteIdent(tc)}`)
          .join(" and ")
      }`;
      for (const [pc, jc] of rel.junction.toParent) {
        where.push(`${jAlias}.${quoteIdent(jc)} = ${parentAlias}.${quoteIdent(pc)}`);
      }
    } else {
      for (const [pc, tc] of rel.pairs) {
        where.push(`${alias}.${quoteIdent(tc)} = ${parentAlias}.${quoteIdent(pc)}`);
      }
    }
    where.push(...this.where(target, alias, path, e.select, joined));
    if (where.length === 0) where.push("true");
    return { rel, target, alias, path, depth, from, where };
  }

  /** A to-many embed that may be empty (`[]`), as a subquery of the select list. */
  private embed(parent: TableInfo, parentAlias: string, e: SelectEmbed, parentPath: string): string {
    const sub = this.embedFrom(parent, parentAlias, e, parentPath, true);
    const row = quoteIdent(`_e${this.aliases++}`);
    // Embedded JSON is jsonb, as PostgREST builds it: its keys in jsonb's order, its text with jsonb's spacing.
    // Built as jsonb (`to_jsonb`, `jsonb_agg`) rather than PostgREST's `json_agg(…)::jsonb`, the same text
    // without parsing each embed's JSON again (a to-many embed of 20 rows: 449 against 487 µs on PGlite).
    return `coalesce((select jsonb_agg(${row}) from (${this.embedRows(sub, e)}) ${row}), '[]')`;
  }

  /** The rows of an embedded resource: its select list, filters, group, order and range. */
  private embedRows(sub: ReturnType<Compiler["embedFrom"]>, e: SelectEmbed): string {
    const node = this.node(sub.path);
    const { columns, groupBy, joins } = this.selectList(sub.target, sub.alias, e.select, sub.path);
    const base = `select ${columns} from ${sub.from}${joins} where ${sub.where.join(" and ")}${groupBy}`;
    if (node.limit !== undefined && node.limit < 0) {
      // PostgREST sends it as is; this is PostgreSQL's answer to it.
      throw new RestError(400, "2201W", "LIMIT must not be negative");
    }
    // A to-one embed takes its offset (and a limit of 0) too, as PostgREST's: `project.offset=1` is null.
    const offset = node.offset !== undefined ? ` offset ${this.param(node.offset)}` : "";
    if (sub.rel.toOne) {
      // No limit unless asked: the planner may then join the row as it joins a table, as PostgREST's.
      const limit = node.limit === undefined ? "" : ` limit ${this.rowCount(Math.min(node.limit, 1))}`;
      return `${base}${limit}${offset}`;
    }
    let tail = this.orderBy(sub.target, sub.alias, node.order, { select: e.select, path: sub.path });
    const limit = this.capped(node.limit);
    if (limit !== undefined) tail += ` limit ${this.rowCount(limit)}`;
    return `${base}${tail}${offset}`;
  }

  /**
   * A to-one embed, or an `!inner` one, as a lateral join pushed to `joins` (PostgREST's LEFT or INNER JOIN
   * LATERAL): the planner may join it by hash, which decides the order of the parent's rows as PostgREST's does.
   * An `!inner` to-many embed joins its rows' aggregate, null when it has none. Returns the entry that reads it,
   * none for an empty embed (`table!inner()`).
   */
  private joinedEmbed(t: TableInfo, alias: string, e: SelectEmbed, path: string, joins: string[]): Entry[] {
    const sub = this.embedFrom(t, alias, e, path, true);
    const rows = this.embedRows(sub, e);
    const lateral = quoteIdent(`_j${this.aliases++}`);
    const kind = e.join === "inner" ? "inner" : "left";
    const name = e.alias ?? e.name;
    if (sub.rel.toOne) {
      joins.push(` ${kind} join lateral (${rows}) ${lateral} on true`);
      // A whole-row value of the null-extended side is null: no related row, `null`.
      return isEmptyEmbed(e) ? [] : [{ sql: `to_jsonb(${lateral}.*)`, name, json: true }];
    }
    const row = quoteIdent(`_e${this.aliases++}`);
    joins.push(
      ` inner join lateral (select jsonb_agg(${row}) as "_v" from (${rows}) ${row}) ${lateral}` +
        ` on ${lateral}."_v" is not null`,
    );
    return isEmptyEmbed(e) ? [] : [{ sql: `${lateral}."_v"`, name, json: true }];
  }

  /**
   * The items of a select list as entries (`alias.*` has no name): its columns in select order, then its embeds
   * and spreads, as PostgREST's SQL lists them (in select order but for those a parameter moved to the front).
   * `expand` writes `*` as the table's columns, which a grouped list needs (PostgREST expands it when aggregates
   * are present).
   */
  private items(
    t: TableInfo,
    alias: string,
    select: SelectItem[],
    path: string,
    joins: string[],
    expand = false,
  ): Entry[] {
    const out: Entry[] = [];
    const related = new Map<SelectEmbed, Entry[]>();
    for (const item of select) {
      if (item.kind === "star") {
        const columns = [...t.columns.values()];
        // A column of a domain that a cast represents is read through it, so `*` then names every column.
        if (!expand && !columns.some((c) => c.toJson)) out.push({ sql: `${alias}.*`, name: null });
        else {
          for (const c of columns) {
            const sql = `${alias}.${quoteIdent(c.name)}`;
            out.push(
              c.toJson ? { sql: `${c.toJson}(${sql})`, name: c.name, json: true } : { sql, name: c.name },
            );
          }
        }
      } else if (item.kind === "column") out.push(this.columnEntry(t, alias, item));
      else if (item.spread) related.set(item, this.spread(t, alias, item, path, joins));
      else if (isEmptyEmbed(item) && item.join !== "inner") {
        // `table()`: embedded for filtering only (`table=not.is.null`), absent from the output.
        this.emptyEmbed(t, item, path);
      } else if (item.join === "inner" || this.relationship(t, item).toOne) {
        related.set(item, this.joinedEmbed(t, alias, item, path, joins));
      } else {
        related.set(item, [{
          sql: this.embed(t, alias, item, path),
          name: item.alias ?? item.name,
          json: true,
        }]);
      }
    }
    if (related.size === 0) return out;
    const forest = this.placed().forests.get(select) ?? related.keys();
    for (const embed of forest) out.push(...related.get(embed) ?? []);
    return out;
  }

  /** Checks the relationships of an empty embed and of the empty embeds in it, whose filters it may hold. */
  private emptyEmbed(t: TableInfo, item: SelectEmbed, path: string): void {
    const rel = this.relationship(t, item);
    const sub = this.embedPath(path, item);
    for (const i of item.select) if (i.kind === "embed") this.emptyEmbed(this.table(rel.target), i, sub);
  }

  /** A column, a computed field or an aggregate (`count()` reads `*`, the row). */
  private columnEntry(t: TableInfo, alias: string, item: SelectColumn): Entry {
    if (item.aggregate && !this.aggregatesEnabled) throw aggregatesNotAllowed();
    if (item.aggregate === "count" && item.field.name === "*" && item.field.path.length === 0) {
      return { sql: "*", name: item.alias ?? "count", aggregate: { fn: "count", cast: item.aggregateCast } };
    }
    // `count` that names no column is PostgreSQL's attribute notation, `count(row)`: PostgREST selects
    // `table.count`, which counts the rows (`select=count`, `projects(count)`).
    const countsRows = item.field.name === "count" && item.field.path.length === 0 &&
      !t.columns.has("count") && !t.computed?.has("count");
    let sql = countsRows ? `pg_catalog.count(${alias})` : this.field(t, alias, item.field);
    // PostgREST's name of a JSON path: its last key, or the column's when the path ends in an index.
    const lastKey = item.field.path.findLast((step) => !(step.index ?? /^-?\d+$/.test(step.key)))?.key;
    const name = item.alias ?? (item.aggregate || lastKey || item.field.name);
    const toJson = item.field.path.length === 0 && !item.aggregate
      ? t.columns.get(item.field.name)?.toJson
      : undefined;
    // A domain's representation, then the cast asked for, as PostgREST applies them (`clr:color::text`).
    if (item.cast) sql = `(${toJson ? `${toJson}(${sql})` : sql})::${item.cast}`;
    else if (toJson) return { sql: `${toJson}(${sql})`, name, json: true };
    if (!item.aggregate) return { sql, name };
    return { sql, name, aggregate: { fn: item.aggregate, cast: item.aggregateCast } };
  }

  /**
   * `...table(cols)`: the columns of a to-one resource flattened into the parent, its aggregates done in the
   * parent's group; of a to-many resource, each column an array of the related rows' values.
   */
  private spread(t: TableInfo, alias: string, item: SelectEmbed, path: string, joins: string[]): Entry[] {
    const sub = this.embedFrom(t, alias, item, path, true);
    const where = sub.where.join(" and ");
    const inner: string[] = [];
    const entries = this.items(sub.target, sub.alias, item.select, sub.path, inner, true);
    const kind = item.join === "inner" ? "inner" : "left";
    const lateral = quoteIdent(`_s${this.aliases++}`);
    if (sub.rel.toOne) {
      // The related row joined, as PostgREST's LEFT (or INNER) JOIN LATERAL: the parent reads its values by name,
      // groups by them, and applies the spread's aggregates to them (`count()` counts the rows that have one).
      const values = entries.map((e, i) => `${e.sql === "*" ? "1" : e.sql} as "_c${i}"`);
      joins.push(
        ` ${kind} join lateral (select ${values.join(", ")} from ${sub.from}${
          inner.join("")
        } where ${where})` +
          ` ${lateral} on true`,
      );
      const read = entries.map((e, i) => ({ ...e, sql: `${lateral}."_c${i}"` }));
      this.spreadValues.set(item, new Map(read.flatMap((e) => e.name === null ? [] : [[e.name, e.sql]])));
      return read;
    }
    if (entries.some((e) => e.aggregate)) {
      throw new RestError(400, "PGRST127", "Feature not implemented", {
        details: "Aggregates are not implemented for one-to-many or many-to-many spreads.",
      });
    }
    const node = this.node(sub.path);
    let tail = this.orderBy(sub.target, sub.alias, node.order, { select: item.select, path: sub.path });
    const limit = this.capped(node.limit);
    if (limit !== undefined) tail += ` limit ${this.rowCount(limit)}`;
    if (node.offset !== undefined) tail += ` offset ${this.param(node.offset)}`;
    const rows = `select ${this.render(entries)} from ${sub.from}${inner.join("")} where ${where}${tail}`;
    // The related rows aggregated once in a lateral join, as PostgREST's: each column an array of their values
    // in one order; `!inner` keeps the parents that have one (the count makes it one row, entries or none).
    const row = quoteIdent(`_r${this.aliases++}`);
    const values = entries.map((e, i) =>
      `coalesce(jsonb_agg(${row}.${quoteIdent(e.name!)}), '[]') as "_c${i}"`
    );
    joins.push(
      ` ${kind} join lateral (select ${[...values, 'count(*) as "_n"'].join(", ")} from (${rows}) ${row})` +
        ` ${lateral} on ${kind === "inner" ? `${lateral}."_n" > 0` : "true"}`,
    );
    return entries.map((e, i) => ({ sql: `${lateral}."_c${i}"`, name: e.name, json: true }));
  }

  /** Entries as a select list; in a grouped list embedded JSON is jsonb, which has an equality to group by. */
  private render(entries: Entry[], grouped = false): string {
    return entries.map((e) => {
      let sql = e.sql;
      if (e.aggregate) {
        sql = `${e.aggregate.fn}(${sql})`;
        if (e.aggregate.cast) sql = `(${sql})::${e.aggregate.cast}`;
      } else if (grouped && e.json) sql = `(${sql})::jsonb`;
      return e.name === null ? sql : `${sql} as ${quoteIdent(e.name)}`;
    }).join(", ");
  }

  /**
   * The select list of a resource (`alias.*`, columns with renames, casts and JSON paths, embeds, aggregates) and,
   * when it aggregates, the GROUP BY of its other items, by position.
   */
  private selectList(t: TableInfo, alias: string, select: SelectItem[], path: string) {
    const grouped = aggregates(select);
    const list: string[] = [];
    const entries = this.items(t, alias, select, path, list, grouped);
    const joins = list.join("");
    if (!entries.some((e) => e.aggregate)) return { columns: this.render(entries), groupBy: "", joins };
    const keys = entries.flatMap((e, i) => e.aggregate ? [] : [String(i + 1)]);
    return {
      columns: this.render(entries, true),
      groupBy: keys.length ? ` group by ${keys.join(", ")}` : "",
      joins,
    };
  }

  /**
   * The select list of a resource (`alias.*`, columns with renames, casts and JSON paths, embeds) and the joins
   * its to-one spreads read from, to follow its FROM item.
   */
  private projection(t: TableInfo, alias: string, select: SelectItem[], path: string) {
    const joins: string[] = [];
    const columns = this.render(this.items(t, alias, select, path, joins));
    return { columns, joins: joins.join("") };
  }

  /** The body written by `this.handler` over the rows `_t` (`scalar`: their one column); null without one. */
  private handlerBody(scalar: string | null): string | null {
    const h = this.handler;
    if (!h) return null;
    let value: string;
    if (h.kind === "cast") {
      // A function returning a media type domain: its one value, as that domain.
      value = `(array_agg(_t.${scalar ?? '"_f"'}::${h.sql}))[1]`;
    } else if (scalar) value = `${h.sql}(_t.${scalar})`;
    else if (h.target === null) value = `${h.sql}(_t)`;
    else value = `${h.sql}(_t::${qualified(this.cache.schema, h.target)})`;
    return h.binary ? `encode((${value})::bytea, 'base64')` : `(${value})::text`;
  }

  private aggregate(): string {
    if (this.csv) return CSV_AGGREGATE;
    // Stripped as PostgREST strips: the aggregate whole, which json_strip_nulls writes again without spaces.
    return this.stripNulls ? "json_strip_nulls(json_agg(_t))" : "json_agg(_t)";
  }

  /** PGRST108 when a filter, order or limit names a resource that the select does not embed. */
  private checkPaths(): void {
    // PostgREST walks the path and names the first resource it does not find (`a.b` → 'b' when 'a' is there).
    const missing = this.placed().missing;
    if (missing !== undefined) throw restErrors.notEmbedded(missing);
  }

  /** The root WHERE clause (without the keyword), or "" when there is no condition. */
  rootWhere(t: TableInfo, alias: string): string {
    return this.where(t, alias, "", this.query.select).join(" and ");
  }

  /**
   * PostgREST's plan stage, before any SQL runs: every embed's relationship is found first (PGRST200, PGRST201),
   * then the name each lateral join takes (`<table>_<name or alias>_<depth>`, empty embeds too): one given twice
   * in a select list is PostgreSQL's 42712, which it reports before any unknown column.
   */
  private planEmbeds(t: TableInfo): void {
    if (!this.query.select.some((i) => i.kind === "embed")) return; // most reads embed nothing
    const targets = new Map<SelectEmbed, TableInfo>();
    const resolve = (parent: TableInfo, select: SelectItem[], path: string) => {
      for (const item of select) {
        if (item.kind !== "embed") continue;
        const target = this.table(this.relationship(parent, item).target);
        targets.set(item, target);
        const sub = this.embedPath(path, item);
        resolve(target, item.select, sub);
      }
    };
    const check = (parent: TableInfo, select: SelectItem[], depth: number) => {
      const laterals = new Set<string>();
      for (const item of select) {
        if (item.kind !== "embed") continue;
        const lateral = `${parent.name}_${item.alias ?? item.name}_${depth}`;
        if (laterals.has(lateral)) {
          throw new RestError(400, "42712", `table name "${lateral}" specified more than once`);
        }
        laterals.add(lateral);
        check(targets.get(item)!, item.select, depth + 1);
      }
    };
    resolve(t, this.query.select, "");
    check(t, this.query.select, 1);
  }

  /**
   * PostgREST plans a write's read first, whatever the write returns: its embeds (PGRST200), the filters of
   * embedded resources (PGRST108) and aggregates (PGRST123) are checked before the write's own rules.
   */
  private planWrite(t: TableInfo): void {
    this.planEmbeds(t);
    if (!this.aggregatesEnabled && usesAggregates(this.query.select)) throw aggregatesNotAllowed();
    this.checkPaths();
  }

  /** A read: rows as one JSON array text (`body`), the page size and, when asked, the exact total. */
  read(name: string, options: ReadOptions): Statement {
    const t = this.table(name);
    return this.readFrom(t, qualified(this.cache.schema, t.name), "", "rows", options);
  }

  /**
   * A call of `fn` (RPC), read like a table: its result filtered, ordered, paged and shaped by the query. Named
   * arguments travel as one JSON parameter typed by `json_to_record` with the parameters' own types; `single`
   * passes the whole body as the function's one json/jsonb parameter.
   */
  call(fn: FunctionInfo, args: CallArguments, options: ReadOptions): Statement {
    const name = qualified(this.cache.schema, fn.name);
    let prefix = "";
    let argsSql = "";
    if (args.kind === "single" || args.kind === "raw") {
      const text = args.kind === "raw" ? args.value : JSON.stringify(args.value);
      argsSql = `${this.param(text)}::text::${fn.params[0]!.type}`;
    } else {
      const keys = Object.keys(args.values);
      const params = new Map(fn.params.map((p) => [p.name, p]));
      if (keys.length > 0) {
        const record = keys.map((k) => `${quoteIdent(k)} ${argumentType(params.get(k)!.type)}`).join(", ");
        const named = keys.map((k) =>
          `${params.get(k)!.variadic ? "variadic " : ""}${quoteIdent(k)} => _a.${quoteIdent(k)}`
        );
        argsSql = named.join(", ");
        prefix = `json_to_record(${this.param(JSON.stringify(args.values))}::text::json) as _a(${record}) ` +
          "cross join lateral ";
      }
    }
    const t = resultTable(fn, this.cache);
    const scalar = fn.result.kind !== "composite";
    const call = prefix + callSource(fn, `${name}(${argsSql})`, scalar);
    const shape: BodyShape = scalar ? (fn.result.set ? "values" : "value") : fn.result.set ? "rows" : "row";
    // The call runs once, in a CTE: the page and the count read the same rows.
    return this.readFrom(
      t,
      "pgrst_source",
      `with pgrst_source as (select "_f".* from ${call}) `,
      shape,
      options,
    );
  }

  private readFrom(
    t: TableInfo,
    source: string,
    prefix: string,
    shape: BodyShape,
    options: ReadOptions,
  ): Statement {
    // The row cap holds at every level of a read, as PostgREST's max-rows (not a write's representation).
    this.maxRows = options.maxRows;
    this.planEmbeds(t);
    const root = this.node("");
    const alias = this.rootAlias(t);
    // The page joins its `!inner` embeds; the count, as PostgREST's, asks that they exist.
    const where = this.where(t, alias, "", this.query.select, true).join(" and ");
    const whereSql = where ? ` where ${where}` : "";
    const scalar = shape === "value" || shape === "values" ? quoteIdent([...t.columns.keys()][0]!) : null;
    // A scalar result in CSV is headed `pgrst_scalar`, as PostgREST names it.
    const list = scalar
      ? { columns: `${alias}.${scalar}${this.csv ? ' as "pgrst_scalar"' : ""}`, groupBy: "", joins: "" }
      : this.selectList(t, alias, this.query.select, "");
    const limit = Math.min(root.limit ?? options.maxRows, options.maxRows);
    let inner = `select ${list.columns} from ${source} ${alias}${list.joins}${whereSql}${list.groupBy}${
      this.orderBy(t, alias, root.order, { select: this.query.select, path: "" })
    }`;
    inner += ` limit ${this.rowCount(limit)}`;
    if (root.offset) inner += ` offset ${this.param(root.offset)}`;
    this.checkPaths();
    const total = options.count ? this.total(t, source, options.countUpTo) : "";
    const aggregate = scalar && !this.csv ? `json_agg(_t.${scalar})` : this.aggregate();
    const body = this.handlerBody(scalar) ??
      (shape === "rows" || shape === "values" || this.csv
        ? `coalesce(${aggregate}, '[]')::text`
        : `coalesce((${aggregate}->0)::text, 'null')`);
    return {
      sql: `${prefix}select count(*)::int8 as page_total, ${body} as body${total} from (${inner}) _t`,
      params: this.params,
      names: this.shownNames,
    };
  }

  /** The exact total of a read's rows (`Prefer: count=exact`), counted up to `upTo` when given. */
  private total(t: TableInfo, source: string, upTo: number | undefined): string {
    const alias = this.rootAlias(t);
    const where = this.rootWhere(t, alias);
    const whereSql = where ? ` where ${where}` : "";
    return upTo === undefined
      ? `, (select count(*) from ${source} ${alias}${whereSql})::int8 as total`
      : `, (select count(*) from (select 1 from ${source} ${alias}${whereSql} limit ${
        this.rowCount(upTo)
      }) _c)::int8 as total`;
  }

  /** The statement that estimates the rows a read matches (`Prefer: count=planned`). */
  plan(name: string): Statement {
    const t = this.table(name);
    const alias = this.rootAlias(t);
    const where = this.rootWhere(t, alias);
    return {
      sql: `explain (format json) select 1 from ${qualified(this.cache.schema, t.name)} ${alias}${
        where ? ` where ${where}` : ""
      }`,
      params: this.params,
      names: this.shownNames,
    };
  }

  /**
   * The final select over the CTE `pgrst_source` of a write: affected count, body, and when asked the primary key
   * of the first row (`location`: `[[column, text value or null], …]` in column order, for `Location`) and the
   * number of rows inserted rather than updated (`inserted`, an upsert's status).
   */
  private returning(
    t: TableInfo,
    o: { representation: boolean; location?: boolean; inserted?: string },
  ): string {
    const alias = this.rootAlias(t);
    const pk = [...t.columns.keys()].filter((c) => t.primaryKey.includes(c));
    // json_each_text writes each value as PostgreSQL's text of the JSON value, as PostgREST's Location has it.
    const location = o.location && pk.length > 0
      ? `, (select json_agg(json_build_array(_k.key, _k.value))::text from json_each_text((select row_to_json(_l) from (select ${
        pk.map((c) => quoteIdent(c)).join(", ")
      } from pgrst_source limit 1) _l)) _k) as location`
      : ", null::text as location";
    const inserted = o.inserted ? `, ${o.inserted} as inserted` : "";
    if (!o.representation) {
      return `select count(*)::int8 as page_total, null::text as body${location}${inserted} from pgrst_source`;
    }
    const order = this.orderBy(t, alias, this.node("").order, { select: this.query.select, path: "" });
    if (aggregates(this.query.select)) {
      // Aggregates group the written rows; as in PostgREST, the rows counted are then the body's (a singular
      // answer, `max-affected` and `Content-Range` see the groups).
      const { columns, groupBy, joins } = this.selectList(t, alias, this.query.select, "");
      this.checkPaths();
      return `select count(*)::int8 as page_total, coalesce(${this.aggregate()}, '[]')::text as body` +
        `${location}${inserted} from (select ${columns} from pgrst_source ${alias}${joins}${groupBy}${order}) _t`;
    }
    const { columns, joins } = this.projection(t, alias, this.query.select, "");
    this.checkPaths();
    const custom = this.handlerBody(null);
    if (custom) {
      return `select (select count(*) from pgrst_source)::int8 as page_total, ` +
        `(select ${custom} from (select ${columns} from pgrst_source ${alias}${joins}${order}) _t) ` +
        `as body${location}${inserted}`;
    }
    return `select (select count(*) from pgrst_source)::int8 as page_total, ` +
      `coalesce((select ${this.aggregate()} from (select ${columns} from pgrst_source ${alias}${joins}${order}) _t), '[]')::text ` +
      `as body${location}${inserted}`;
  }

  /**
   * What a write returns, as PostgREST's: a row count alone (`1`) without a representation or a Location; else
   * the select's columns, the columns its embeds join on and the primary key, or every column when the select
   * has `*`, a computed field or a computed relationship. So a role that may insert into a table but not read it,
   * or read only some of its columns, makes the writes those rights allow. `alias` qualifies each name.
   */
  private returned(t: TableInfo, o: { representation: boolean; location?: boolean }, alias?: string): string {
    if (!o.representation && !o.location) return "1";
    const names = new Set<string>();
    let all = false;
    for (const item of this.query.select) {
      if (item.kind === "star") all = true;
      else if (item.kind === "column") {
        // `count()` and `count` read the row; a computed field is a function of the whole row.
        if (t.columns.has(item.field.name)) names.add(item.field.name);
        else all = true;
      } else {
        const rel = this.relationship(t, item);
        if (rel.computed) all = true;
        else for (const [column] of rel.junction?.toParent ?? rel.pairs) names.add(column);
      }
    }
    const q = (c: string) => alias ? `${alias}.${c}` : c;
    if (all) return q("*");
    for (const c of t.primaryKey) names.add(c);
    return names.size === 0 ? "1" : [...names].map((c) => q(quoteIdent(c))).join(", ");
  }

  /**
   * True when the filters are what a PUT takes: `eq` on every primary key column and on nothing else (no `not.`,
   * no `or`/`and`, no JSON path, no embedded filter), as PostgREST checks them.
   */
  private filtersNamePrimaryKey(t: TableInfo): boolean {
    const names = new Set<string>();
    for (const [path, node] of this.query.nodes) {
      for (const c of node.conditions) {
        if (path !== "" || c.kind !== "filter") return false;
        if (c.op !== "eq" || c.negate || c.quantifier || c.field.path.length > 0) return false;
        names.add(c.field.name);
      }
    }
    const pk = t.primaryKey;
    return pk.length > 0 && names.size === pk.length && pk.every((c) => names.has(c));
  }

  /**
   * A single-row upsert (PUT): the filters give the primary key (PGRST105 otherwise), the body row whose key
   * matches them is inserted or, when the key exists, updated. The write happens only when exactly one body row
   * matches; the caller refuses any other count (PGRST115). `inserted` tells an insert from an update.
   */
  put(name: string, rows: Record<string, unknown>[], options: { representation: boolean }): Statement {
    const t = this.table(name);
    this.planWrite(t);
    if (!this.filtersNamePrimaryKey(t)) throw restErrors.putFilters();
    return this.insert(
      name,
      { rows, resolution: "merge-duplicates", missingDefault: false, ...options },
      true,
    );
  }

  /** An insert (POST), with upsert when a resolution is given and the table has a key (or `on_conflict`). */
  insert(name: string, options: InsertOptions, put = false): Statement {
    const t = this.table(name);
    if (!put) this.planWrite(t);
    const listed = put ? undefined : this.query.columns; // PUT takes the body's keys, as PostgREST
    let columns: string[];
    if (listed) {
      for (const c of [...listed].sort()) {
        if (!t.columns.has(c)) throw restErrors.unknownBodyColumn(c, t.name);
      }
      columns = listed;
    } else {
      const keys = new Set<string>();
      for (const row of options.rows) for (const k of Object.keys(row)) keys.add(k);
      // PostgREST checks the body's keys as a sorted set: the first unknown one in that order is named.
      for (const k of [...keys].sort()) if (!t.columns.has(k)) throw restErrors.unknownBodyColumn(k, t.name);
      columns = [...keys];
    }
    // No body column: no row can carry the key the filters name.
    if (put && columns.length === 0) throw restErrors.putMismatch();
    // With missing=default the rows are one insert, as PostgREST writes it: each row's JSON over its columns'
    // defaults, evaluated for every row (a sequence advances once per row and defaulted column).
    const withDefaults = options.missingDefault === true && !put;
    const groups = options.rows.length > 0 ? [{ columns, rows: options.rows }] : [];
    // Without a key to conflict on, PostgREST inserts as if no resolution were asked.
    const target = put ? t.primaryKey : this.query.onConflict ?? t.primaryKey;
    const resolution = target.length > 0 ? options.resolution : undefined;
    let conflict = "";
    if (resolution) {
      // PostgREST names the columns as given; an unknown one is PostgreSQL's own error.
      for (const c of target) {
        if (!t.columns.has(c)) throw new RestError(400, "42703", `column "${c}" does not exist`);
      }
      conflict = ` on conflict (${target.map(quoteIdent).join(", ")})`;
      conflict += resolution === "ignore-duplicates" ? " do nothing" : (() => {
        const set = columns.filter((c) => !target.includes(c));
        if (set.length === 0) {
          return ` do update set ${quoteIdent(target[0]!)} = excluded.${quoteIdent(target[0]!)}`;
        }
        return ` do update set ${set.map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(", ")}`;
      })();
    }
    // A merge tells inserted rows from updated ones as PostgREST does (a view or a partitioned table has no
    // `xmax` to read): a transaction-local tally goes up for each row offered to the insert and down for each one
    // the conflict turns into an update (the comparisons only make it a condition).
    const tallied = resolution === "merge-duplicates";
    const tally = (op: "+" | "-") =>
      `set_config('pgrst.inserted', (coalesce(nullif(current_setting('pgrst.inserted', true), '')::int, 0) ${op} 1)::text, true)`;
    const offered = tallied ? ` where ${tally("+")} <> '0'` : "";
    if (tallied) conflict += ` where ${tally("-")} <> '-1'`;
    const into = qualified(this.cache.schema, t.name);
    const returned = this.returned(t, options);
    const returning = ` returning ${returned}`;
    const ctes: string[] = [];
    const sources: string[] = [];
    let n = 0;
    for (const group of groups) {
      const name = `pgrst_insert_${n++}`;
      let body: string;
      if (group.columns.length === 0) {
        // Rows without a key: each takes every default, as PostgREST inserts them (a select of no column).
        const rows = `json_array_elements(${
          this.param(JSON.stringify(group.rows))
        }::text::json) "pgrst_body"`;
        body = `insert into ${into} select from ${rows}${offered}${conflict}${returning}`;
      } else {
        const cols = group.columns.map(quoteIdent).join(", ");
        const rows = group.rows.map((r) =>
          Object.fromEntries(
            group.columns.filter((c) => !withDefaults || Object.hasOwn(r, c)).map((c) => [c, r[c] ?? null]),
          )
        );
        const given = `${this.param(JSON.stringify(rows))}::text`;
        const json = withDefaults ? this.withDefaults(t, group.columns, given) : given;
        // Columns of a domain with a cast from json are read through it (domain representations).
        const parsed = this.parsedColumns(t, group.columns);
        const alias = parsed.size === 0 ? '"pgrst_body"' : "_i";
        const records = parsed.size === 0
          ? `json_populate_recordset(null::${qualified(this.cache.schema, t.name)}, ${json}::json) ${alias}`
          : `json_array_elements(${json}::json) _e cross join lateral ${parsed.populate("_e.value")}`;
        if (put) {
          // The body rows whose key matches the filters; the write goes on only when there is exactly one.
          const where = this.node("").conditions
            .map((c) => this.condition(t, alias, c, { select: [], path: "" }))
            .join(" and ");
          const values = group.columns.map((c) =>
            `${parsed.value(c, "_e.value") ?? `${alias}.${quoteIdent(c)}`} as ${quoteIdent(c)}`
          );
          ctes.push(`pgrst_put as (select ${values.join(", ")} from ${records} where ${where})`);
          body = `insert into ${into} (${cols}) select ${cols} from pgrst_put ` +
            `where (select count(*) from pgrst_put) = 1${
              offered.replace(" where", " and")
            }${conflict}${returning}`;
        } else {
          const values = parsed.size === 0 ? cols : parsed.select("_e.value");
          body =
            `insert into ${into} (${cols}) select ${values} from ${records}${offered}${conflict}${returning}`;
        }
      }
      ctes.push(`${name} as (${body})`);
      sources.push(`select * from ${name}`);
    }
    if (ctes.length === 0) {
      ctes.push(
        `pgrst_insert_0 as (select ${returned} from ${qualified(this.cache.schema, t.name)} where false)`,
      );
      sources.push("select * from pgrst_insert_0");
    }
    const source = `pgrst_source as (${sources.join(" union all ")})`;
    // The tally is read once the source has been read to its end, so after every insert ran.
    const inserted = tallied
      ? "(select coalesce(nullif(current_setting('pgrst.inserted', true), '')::int8, 0) from (select count(*) from pgrst_source) _c)"
      : undefined;
    return {
      sql: `with ${[...ctes, source].join(", ")} ${
        this.returning(t, { representation: options.representation, location: options.location, inserted })
      }`,
      params: this.params,
      names: this.shownNames,
    };
  }

  /**
   * The rows of the JSON array text `json` over the defaults of `columns` (those with one), as text: a key a row
   * gives wins (PostgREST's `jsonb_build_object(defaults) || row`, every default evaluated for each row).
   */
  private withDefaults(t: TableInfo, columns: string[], json: string): string {
    const pairs = columns.flatMap((c) => {
      const d = t.columns.get(c)?.default;
      return d === undefined ? [] : [`'${c.replaceAll("'", "''")}', ${d}`];
    });
    // jsonb_build_object takes at most 100 arguments: 50 pairs a call, joined.
    const chunks: string[] = [];
    for (let i = 0; i < pairs.length; i += 50) {
      chunks.push(`jsonb_build_object(${pairs.slice(i, i + 50).join(", ")})`);
    }
    const defaults = chunks.length === 0 ? "'{}'::jsonb" : chunks.join(" || ");
    return `(select jsonb_agg(${defaults} || elem) from jsonb_array_elements(${json}::jsonb) elem)::text`;
  }

  /**
   * The written columns a domain with a cast from json represents (PostgREST's domain representations): each is
   * read from the body's JSON through its cast function, the others populate the row as usual.
   */
  private parsedColumns(t: TableInfo, columns: string[]) {
    const parsed = new Map(columns.flatMap((c) => {
      const fn = t.columns.get(c)?.fromJson;
      return fn ? [[c, fn] as const] : [];
    }));
    const table = qualified(this.cache.schema, t.name);
    const value = (c: string, json: string) => {
      const fn = parsed.get(c);
      return fn ? `${fn}((${json}::jsonb -> ${this.param(c)}::text)::json)` : null;
    };
    return {
      size: parsed.size,
      value,
      /** The columns of the insert's select, from the row object `json`. */
      select: (json: string) => columns.map((c) => value(c, json) ?? `_i.${quoteIdent(c)}`).join(", "),
      /**
       * The represented keys' JSON values as columns of a function scan (PostgREST's `json_to_record`), for an
       * update to parse in its SET: there the parse runs on the rows updated only, never folded into a constant
       * at planning (a value that does not parse changes no row when no row matches).
       */
      record: (json: string) =>
        `json_to_record(${json}) as _r(${[...parsed.keys()].map((c) => `${quoteIdent(c)} json`).join(", ")})`,
      /** A represented column read from `record`'s scan. */
      fromRecord: (c: string) => {
        const fn = parsed.get(c);
        return fn ? `${fn}(_r.${quoteIdent(c)})` : null;
      },
      /** The row populated from `json` without the represented keys (their text need not fit the base type). */
      populate: (json: string) =>
        `jsonb_populate_record(null::${table}, ${json}::jsonb - ${
          this.param(arrayLiteral([...parsed.keys()]))
        }::text[]) _i`,
    };
  }

  /** An update (PATCH) of the rows the filters match (every row without a filter), with the values of `patch`. */
  update(name: string, patch: Record<string, unknown>, options: MutateOptions): Statement {
    const t = this.table(name);
    this.planWrite(t);
    const keys = this.query.columns ?? Object.keys(patch);
    for (const k of [...keys].sort()) if (!t.columns.has(k)) throw restErrors.unknownBodyColumn(k, t.name);
    const alias = this.rootAlias(t);
    const before = this.params.length;
    const where = this.rootWhere(t, alias);
    if (!where && options.requireFilter) throw restErrors.unfiltered("UPDATE");
    const whereSql = where ? ` where ${where}` : "";
    let source: string;
    if (keys.length === 0) {
      // Nothing to set changes no row, whatever the filters say (PostgREST: `WHERE false`, its filters unused).
      this.params.length = before;
      source = `select ${this.returned(t, options, alias)} from ${
        qualified(this.cache.schema, t.name)
      } ${alias} where false`;
    } else {
      // missing=default: a listed key the body lacks takes the column default, as PostgREST's PATCH does.
      const defaulted = (k: string) => options.missingDefault === true && !Object.hasOwn(patch, k);
      const given = keys.filter((k) => !defaulted(k));
      const value = this.param(JSON.stringify(Object.fromEntries(given.map((k) => [k, patch[k] ?? null]))));
      const parsed = this.parsedColumns(t, given);
      const set = keys.map((k) =>
        `${quoteIdent(k)} = ${defaulted(k) ? "default" : parsed.fromRecord(k) ?? `_b.${quoteIdent(k)}`}`
      ).join(", ");
      const record = parsed.size === 0 ? "" : `, ${parsed.record(`${value}::text::json`)}`;
      source = `update ${qualified(this.cache.schema, t.name)} as ${alias} set ${set} from (select * from ${
        parsed.size === 0
          ? `json_populate_record(null::${qualified(this.cache.schema, t.name)}, ${value}::text::json)`
          : parsed.populate(`${value}::text::json`)
      }) _b${record}${whereSql} returning ${this.returned(t, options, alias)}`;
    }
    return {
      sql: `with pgrst_source as (${source}) ${this.returning(t, options)}`,
      params: this.params,
      names: this.shownNames,
    };
  }

  /** A delete (DELETE) of the rows the filters match (every row without a filter). */
  delete(name: string, options: MutateOptions): Statement {
    const t = this.table(name);
    this.planWrite(t);
    const alias = this.rootAlias(t);
    const where = this.rootWhere(t, alias);
    if (!where && options.requireFilter) throw restErrors.unfiltered("DELETE");
    const source = `delete from ${qualified(this.cache.schema, t.name)} as ${alias}${
      where ? ` where ${where}` : ""
    } returning ${this.returned(t, options, alias)}`;
    return {
      sql: `with pgrst_source as (${source}) ${this.returning(t, options)}`,
      params: this.params,
      names: this.shownNames,
    };
  }
}
