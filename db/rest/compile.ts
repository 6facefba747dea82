import { quoteIdent } from "../driver.ts";
import type {
  Condition,
  Field,
  Filter,
  Node,
  OrderTerm,
  ParsedQuery,
  SelectEmbed,
  SelectItem,
} from "./ast.ts";
import { FuzzySet } from "../../lib/fuzzy.ts";
import { RestError, restErrors } from "../../lib/rest_errors.ts";
import { resolveRelationship } from "./relationships.ts";
import type { FunctionInfo, SchemaCache, TableInfo } from "./schema.ts";

/** The select list and path of the resource whose conditions are compiled. */
interface Level {
  select: SelectItem[];
  path: string;
}

/** One parameterized SQL statement: the only thing the data API sends to the database for a request. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** Options of a read. */
export interface ReadOptions {
  /** Add the exact count of matching rows (`total`). */
  count: boolean;
  /** The cap on rows (max rows of the configuration). */
  maxRows: number;
}

/** The arguments of a function call: by name, or the whole body as the one json/jsonb parameter. */
export type CallArguments =
  | { kind: "named"; values: Record<string, unknown> }
  | { kind: "single"; value: unknown };

/** How the rows of a read become the body: an array of objects, one object, an array of values, one value. */
type BodyShape = "rows" | "row" | "values" | "value";

/** The result of a function as a table the compiler can filter, order and embed from. */
function resultTable(fn: FunctionInfo): TableInfo {
  const columns = fn.result.kind === "composite" ? fn.result.columns : [{
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
}

/** Options of an update (PATCH) or a delete (DELETE). */
export interface MutateOptions {
  representation: boolean;
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

/** A PostgreSQL array literal of text elements, every element quoted. */
export function arrayLiteral(items: string[]): string {
  return `{${items.map((i) => `"${i.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
}

function qualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * Compiler turns a parsed request into one SQL statement over the schema cache. Every identifier is checked
 * against the cache and quoted; every value, JSON key and text search configuration is a `$n` parameter.
 */
export class Compiler {
  readonly params: unknown[] = [];
  private aliases = 0;
  private readonly used = new Set<string>([""]);
  /** `Accept: …;nulls=stripped`: leave null fields out of the rows (postgrest-js `stripNulls()`). */
  stripNulls = false;

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

  private node(path: string): Node {
    return this.query.nodes.get(path) ?? { conditions: [], order: [] };
  }

  private column(t: TableInfo, name: string): string {
    if (!t.columns.has(name)) throw restErrors.unknownColumn(t.name, name);
    return quoteIdent(name);
  }

  private field(t: TableInfo, alias: string, f: Field): string {
    let sql = `${alias}.${this.column(t, f.name)}`;
    for (const step of f.path) {
      const index = step.index ?? /^-?\d+$/.test(step.key);
      const key = index ? `${this.param(step.key)}::int` : `${this.param(step.key)}::text`;
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
    const col = t.columns.get(f.name)!;
    const last = f.path.at(-1);
    if (!last) return col.type;
    return last.op === "->>" ? "text" : col.udt === "json" ? "json" : "jsonb";
  }

  private value(value: string, type: string): string {
    return `${this.param(value)}::text::${type}`;
  }

  private filter(t: TableInfo, alias: string, f: Filter): string {
    const lhs = this.field(t, alias, f.field);
    const type = this.fieldType(t, f.field);
    let sql: string;
    const value = f.value;
    if (f.op === "in") {
      sql = `${lhs} = any(${this.value(arrayLiteral(value as string[]), `${type}[]`)})`;
    } else if (f.op === "is") {
      const word = value as string;
      sql = `${lhs} is ${word === "not_null" ? "not null" : word}`;
    } else if (f.op === "isdistinct") {
      sql = `${lhs} is distinct from ${this.value(value as string, type)}`;
    } else if (f.op in TSQUERY) {
      const config = f.language ? `${this.param(f.language)}::text::regconfig, ` : "";
      const col = t.columns.get(f.field.name);
      const vector = f.field.path.length === 0 && col?.udt === "tsvector"
        ? lhs
        : `to_tsvector(${config}${lhs})`;
      sql = `${vector} @@ ${TSQUERY[f.op]}(${config}${this.param(value)}::text)`;
    } else {
      const op = OPS[f.op]!;
      const textual = TEXT_OPS.has(f.op);
      const fix = (v: string) => f.op === "like" || f.op === "ilike" ? v.replaceAll("*", "%") : v;
      if (f.quantifier) {
        // The value is an array literal that PostgreSQL reads, as PostgREST passes it (`*` is `%` for like).
        sql = `${lhs} ${op} ${f.quantifier}(${
          this.value(fix(value as string), textual ? "text[]" : `${type}[]`)
        })`;
      } else {
        let v = fix(value as string);
        if (f.op === "ov" && v.startsWith("(") && v.endsWith(")")) v = `{${v.slice(1, -1)}}`;
        sql = `${lhs} ${op} ${textual ? `${this.param(v)}::text` : this.value(v, type)}`;
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
        sql = `(select ${this.field(sub.target, sub.alias, o.field)} from ${sub.from} where ${
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

  /** Finds the node of an embedded resource: its alias path first, then its name path. */
  private embedPath(parentPath: string, e: SelectEmbed): string {
    const join = (seg: string) => parentPath === "" ? seg : `${parentPath}.${seg}`;
    const byAlias = join(e.alias ?? e.name);
    if (this.query.nodes.has(byAlias)) return byAlias;
    return join(e.name);
  }

  /** The WHERE conditions of a resource: its filters and the `!inner` embeds that must exist. */
  private where(t: TableInfo, alias: string, path: string, select: SelectItem[]): string[] {
    const parts = this.node(path).conditions.map((c) => this.condition(t, alias, c, { select, path }));
    for (const item of select) {
      if (item.kind !== "embed" || item.join !== "inner") continue;
      const sub = this.embedFrom(t, alias, item, path);
      parts.push(`exists (select 1 from ${sub.from} where ${sub.where.join(" and ")})`);
    }
    return parts;
  }

  private embedFrom(parent: TableInfo, parentAlias: string, e: SelectEmbed, parentPath: string) {
    const rel = resolveRelationship(this.cache, parent.name, e.name, e.hint);
    const target = this.table(rel.target);
    const alias = this.alias();
    const path = this.embedPath(parentPath, e);
    this.used.add(path);
    let from = `${qualified(this.cache.schema, target.name)} ${alias}`;
    const where: string[] = [];
    if (rel.junction) {
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
    where.push(...this.where(target, alias, path, e.select));
    return { rel, target, alias, path, from, where };
  }

  private embed(parent: TableInfo, parentAlias: string, e: SelectEmbed, parentPath: string): string {
    const sub = this.embedFrom(parent, parentAlias, e, parentPath);
    const node = this.node(sub.path);
    const columns = this.projection(sub.target, sub.alias, e.select, sub.path);
    const row = quoteIdent(`_e${this.aliases++}`);
    const base = `select ${columns} from ${sub.from} where ${sub.where.join(" and ")}`;
    if (sub.rel.toOne) return `(select row_to_json(${row}) from (${base} limit 1) ${row})`;
    let tail = this.orderBy(sub.target, sub.alias, node.order, { select: e.select, path: sub.path });
    if (node.limit !== undefined && node.limit < 0) {
      // PostgREST sends it as is; this is PostgreSQL's answer to it.
      throw new RestError(400, "2201W", "LIMIT must not be negative");
    }
    if (node.limit !== undefined) tail += ` limit ${this.rowCount(node.limit)}`;
    if (node.offset !== undefined) tail += ` offset ${this.param(node.offset)}`;
    return `coalesce((select json_agg(${row}) from (${base}${tail}) ${row}), '[]')`;
  }

  /** The items of a select list as [SQL expression, output name] (`alias.*` has no name). */
  private items(t: TableInfo, alias: string, select: SelectItem[], path: string): [string, string | null][] {
    const out: [string, string | null][] = [];
    for (const item of select) {
      if (item.kind === "star") out.push([`${alias}.*`, null]);
      else if (item.kind === "column") {
        let sql = this.field(t, alias, item.field);
        if (item.cast) sql = `(${sql})::${item.cast}`;
        out.push([sql, item.alias ?? item.field.path.at(-1)?.key ?? item.field.name]);
      } else if (item.spread) {
        // `...table(cols)`: the columns of a to-one resource, flattened into the parent.
        const sub = this.embedFrom(t, alias, item, path);
        if (!sub.rel.toOne) {
          throw restErrors.parse(`failed to spread '${item.name}'`, "only a to-one resource can be spread");
        }
        const where = sub.where.join(" and ");
        for (const [sql, name] of this.items(sub.target, sub.alias, item.select, sub.path)) {
          const names = name === null
            ? [...sub.target.columns.keys()].map((c) => [`${sub.alias}.${quoteIdent(c)}`, c] as const)
            : [[sql, name] as const];
          for (const [expr, n] of names) {
            out.push([`(select ${expr} from ${sub.from} where ${where} limit 1)`, n]);
          }
        }
      } else if (item.select.length === 0) {
        // `table()`: embedded for filtering only (`!inner`, `table=not.is.null`), absent from the output.
        resolveRelationship(this.cache, t.name, item.name, item.hint);
        this.used.add(this.embedPath(path, item));
      } else {
        out.push([this.embed(t, alias, item, path), item.alias ?? item.name]);
      }
    }
    return out;
  }

  /** The select list of a resource: `alias.*`, columns with renames, casts and JSON paths, embeds. */
  projection(t: TableInfo, alias: string, select: SelectItem[], path: string): string {
    return this.items(t, alias, select, path)
      .map(([sql, name]) => name === null ? sql : `${sql} as ${quoteIdent(name)}`)
      .join(", ");
  }

  private aggregate(): string {
    return this.stripNulls ? "json_agg(json_strip_nulls(row_to_json(_t)))" : "json_agg(_t)";
  }

  /** PGRST108 when a filter, order or limit names a resource that the select does not embed. */
  private checkPaths(): void {
    for (const path of this.query.nodes.keys()) {
      if (!this.used.has(path)) {
        throw restErrors.notEmbedded(path);
      }
    }
  }

  /** The root WHERE clause (without the keyword), or "" when there is no condition. */
  rootWhere(t: TableInfo, alias: string): string {
    return this.where(t, alias, "", this.query.select).join(" and ");
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
    let call: string;
    if (args.kind === "single") {
      call = `${name}(${this.param(JSON.stringify(args.value))}::text::${fn.params[0]!.type}) as "_f"`;
    } else {
      const keys = Object.keys(args.values);
      const params = new Map(fn.params.map((p) => [p.name, p]));
      if (keys.length === 0) call = `${name}() as "_f"`;
      else {
        const record = keys.map((k) => `${quoteIdent(k)} ${params.get(k)!.type}`).join(", ");
        const named = keys.map((k) =>
          `${params.get(k)!.variadic ? "variadic " : ""}${quoteIdent(k)} => _a.${quoteIdent(k)}`
        );
        call = `json_to_record(${this.param(JSON.stringify(args.values))}::text::json) as _a(${record}) ` +
          `cross join lateral ${name}(${named.join(", ")}) as "_f"`;
      }
    }
    const t = resultTable(fn);
    const scalar = fn.result.kind !== "composite";
    // A scalar result is one column named after the function, as `select * from fn()` names it.
    if (scalar) call += `(${quoteIdent(fn.name)})`;
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
    const root = this.node("");
    const alias = this.alias();
    const where = this.rootWhere(t, alias);
    const whereSql = where ? ` where ${where}` : "";
    const scalar = shape === "value" || shape === "values" ? quoteIdent([...t.columns.keys()][0]!) : null;
    const columns = scalar ? `${alias}.${scalar}` : this.projection(t, alias, this.query.select, "");
    const limit = Math.min(root.limit ?? options.maxRows, options.maxRows);
    let inner = `select ${columns} from ${source} ${alias}${whereSql}${
      this.orderBy(t, alias, root.order, { select: this.query.select, path: "" })
    }`;
    inner += ` limit ${this.rowCount(limit)}`;
    if (root.offset) inner += ` offset ${this.param(root.offset)}`;
    this.checkPaths();
    const total = options.count
      ? `, (select count(*) from ${source} ${alias}${whereSql})::int8 as total`
      : "";
    const aggregate = scalar ? `json_agg(_t.${scalar})` : this.aggregate();
    const body = shape === "rows" || shape === "values"
      ? `coalesce(${aggregate}, '[]')::text`
      : `coalesce((${aggregate}->0)::text, 'null')`;
    return {
      sql: `${prefix}select count(*)::int8 as page_total, ${body} as body${total} from (${inner}) _t`,
      params: this.params,
    };
  }

  /** The statement that estimates the rows a read matches (`Prefer: count=planned`). */
  plan(name: string): Statement {
    const t = this.table(name);
    const alias = this.alias();
    const where = this.rootWhere(t, alias);
    return {
      sql: `explain (format json) select 1 from ${qualified(this.cache.schema, t.name)} ${alias}${
        where ? ` where ${where}` : ""
      }`,
      params: this.params,
    };
  }

  /** The final select over the CTE `pgrst_source` of a write: affected count, body, location. */
  private returning(t: TableInfo, representation: boolean): string {
    const alias = this.alias();
    const pk = t.primaryKey;
    const location = pk.length > 0
      ? `, (select row_to_json(_l)::text from (select ${
        pk.map((c) => quoteIdent(c)).join(", ")
      } from pgrst_source limit 1) _l) as location`
      : ", null::text as location";
    if (!representation) {
      return `select count(*)::int8 as page_total, null::text as body${location} from pgrst_source`;
    }
    const columns = this.projection(t, alias, this.query.select, "");
    const order = this.orderBy(t, alias, this.node("").order, { select: this.query.select, path: "" });
    this.checkPaths();
    return `select (select count(*) from pgrst_source)::int8 as page_total, ` +
      `coalesce((select ${this.aggregate()} from (select ${columns} from pgrst_source ${alias}${order}) _t), '[]')::text ` +
      `as body${location}`;
  }

  /** An insert (POST), with upsert when a resolution is given. */
  insert(name: string, options: InsertOptions): Statement {
    const t = this.table(name);
    const listed = this.query.columns;
    let columns: string[];
    if (listed) {
      for (const c of listed) if (!t.columns.has(c)) throw restErrors.unknownBodyColumn(c, t.name);
      columns = listed;
    } else {
      const keys = new Set<string>();
      for (const row of options.rows) for (const k of Object.keys(row)) keys.add(k);
      for (const k of keys) if (!t.columns.has(k)) throw restErrors.unknownBodyColumn(k, t.name);
      columns = [...keys];
    }
    // With missing=default, rows are grouped by the keys they carry so an absent key keeps its default.
    const groups = new Map<string, { columns: string[]; rows: Record<string, unknown>[] }>();
    for (const row of options.rows) {
      const cols = options.missingDefault ? columns.filter((c) => Object.hasOwn(row, c)) : columns;
      const key = cols.join("\0");
      const group = groups.get(key) ?? { columns: cols, rows: [] };
      group.rows.push(row);
      groups.set(key, group);
    }
    let conflict = "";
    if (options.resolution) {
      const target = this.query.onConflict ?? t.primaryKey;
      if (target.length === 0) {
        throw restErrors.parse(
          "An upsert needs on_conflict or a primary key",
          `table '${t.name}' has neither`,
        );
      }
      for (const c of target) this.column(t, c);
      conflict = ` on conflict (${target.map(quoteIdent).join(", ")})`;
      conflict += options.resolution === "ignore-duplicates" ? " do nothing" : (() => {
        const set = columns.filter((c) => !target.includes(c));
        if (set.length === 0) {
          return ` do update set ${quoteIdent(target[0]!)} = excluded.${quoteIdent(target[0]!)}`;
        }
        return ` do update set ${set.map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(", ")}`;
      })();
    }
    const ctes: string[] = [];
    const sources: string[] = [];
    let n = 0;
    for (const group of groups.values()) {
      const name = `pgrst_insert_${n++}`;
      let body: string;
      if (group.columns.length === 0) {
        if (group.rows.length !== 1) {
          throw restErrors.body(
            "Cannot insert several rows without columns",
            "give each row at least one key",
          );
        }
        body = `insert into ${qualified(this.cache.schema, t.name)} default values${conflict} returning *`;
      } else {
        const cols = group.columns.map(quoteIdent).join(", ");
        const rows = group.rows.map((r) => Object.fromEntries(group.columns.map((c) => [c, r[c] ?? null])));
        body = `insert into ${
          qualified(this.cache.schema, t.name)
        } (${cols}) select ${cols} from json_populate_recordset(null::${
          qualified(this.cache.schema, t.name)
        }, ${this.param(JSON.stringify(rows))}::text::json) _i${conflict} returning *`;
      }
      ctes.push(`${name} as (${body})`);
      sources.push(`select * from ${name}`);
    }
    if (ctes.length === 0) {
      ctes.push(`pgrst_insert_0 as (select * from ${qualified(this.cache.schema, t.name)} where false)`);
      sources.push("select * from pgrst_insert_0");
    }
    const source = `pgrst_source as (${sources.join(" union all ")})`;
    return {
      sql: `with ${[...ctes, source].join(", ")} ${this.returning(t, options.representation)}`,
      params: this.params,
    };
  }

  /** An update (PATCH) of the rows the filters match, with the values of `patch`. */
  update(name: string, patch: Record<string, unknown>, options: MutateOptions): Statement {
    const t = this.table(name);
    const keys = this.query.columns ?? Object.keys(patch);
    for (const k of keys) if (!t.columns.has(k)) throw restErrors.unknownBodyColumn(k, t.name);
    const alias = this.alias();
    const where = this.rootWhere(t, alias);
    if (!where) throw restErrors.unfiltered("UPDATE");
    let source: string;
    if (keys.length === 0) {
      source = `select ${alias}.* from ${qualified(this.cache.schema, t.name)} ${alias} where false`;
    } else {
      const value = this.param(JSON.stringify(Object.fromEntries(keys.map((k) => [k, patch[k] ?? null]))));
      const set = keys.map((k) => `${quoteIdent(k)} = _b.${quoteIdent(k)}`).join(", ");
      source = `update ${
        qualified(this.cache.schema, t.name)
      } as ${alias} set ${set} from (select * from json_populate_record(null::${
        qualified(this.cache.schema, t.name)
      }, ${value}::text::json)) _b where ${where} returning ${alias}.*`;
    }
    return {
      sql: `with pgrst_source as (${source}) ${this.returning(t, options.representation)}`,
      params: this.params,
    };
  }

  /** A delete (DELETE) of the rows the filters match. */
  delete(name: string, options: MutateOptions): Statement {
    const t = this.table(name);
    const alias = this.alias();
    const where = this.rootWhere(t, alias);
    if (!where) throw restErrors.unfiltered("DELETE");
    const source = `delete from ${
      qualified(this.cache.schema, t.name)
    } as ${alias} where ${where} returning ${alias}.*`;
    return {
      sql: `with pgrst_source as (${source}) ${this.returning(t, options.representation)}`,
      params: this.params,
    };
  }
}
