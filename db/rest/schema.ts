import type { Queryable } from "../driver.ts";

/** A column of an exposed table. */
export interface ColumnInfo {
  name: string;
  /** `format_type` of the column, e.g. `integer`, `text[]`, `character varying(20)`. */
  type: string;
  /** The base type's name in pg_type, e.g. `int4`, `_text`, `tsvector`. */
  udt: string;
  nullable: boolean;
  hasDefault: boolean;
  generated: boolean;
}

/** A foreign key between two exposed tables. */
export interface ForeignKey {
  name: string;
  table: string;
  columns: string[];
  refTable: string;
  refColumns: string[];
}

/** A table or view of the exposed schema. */
export interface TableInfo {
  name: string;
  kind: "table" | "view";
  columns: Map<string, ColumnInfo>;
  primaryKey: string[];
  /** Primary key and unique constraints, each as its list of columns. */
  uniques: string[][];
}

/** What the data API knows of a project's exposed schema (`public`). */
export interface SchemaCache {
  tables: Map<string, TableInfo>;
  foreignKeys: ForeignKey[];
  loadedAt: number;
}

/** The name of the exposed schema. */
export const EXPOSED_SCHEMA = "public";

// One round trip, JSON text so both drivers give the same shape.
const INTROSPECT = `
select json_build_object(
  'tables', coalesce((
    select json_agg(json_build_object(
      'name', c.relname,
      'kind', case when c.relkind in ('r', 'p', 'f') then 'table' else 'view' end,
      'columns', coalesce((
        select json_agg(json_build_object(
          'name', a.attname,
          'type', format_type(a.atttypid, a.atttypmod),
          'udt', t.typname,
          'nullable', not a.attnotnull,
          'has_default', a.atthasdef or a.attidentity <> '',
          'generated', a.attgenerated <> ''
        ) order by a.attnum)
        from pg_attribute a join pg_type t on t.oid = a.atttypid
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      ), '[]'),
      'uniques', coalesce((
        select json_agg(json_build_object(
          'primary', con.contype = 'p',
          'columns', (
            select json_agg(a.attname order by k.i)
            from unnest(con.conkey) with ordinality k(n, i)
            join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n
          )
        ))
        from pg_constraint con where con.conrelid = c.oid and con.contype in ('p', 'u')
      ), '[]')
    ))
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1 and c.relkind in ('r', 'v', 'm', 'f', 'p')
  ), '[]'),
  'fks', coalesce((
    select json_agg(json_build_object(
      'name', con.conname,
      'table', cl.relname,
      'ref_table', fcl.relname,
      'columns', (
        select json_agg(a.attname order by k.i)
        from unnest(con.conkey) with ordinality k(n, i)
        join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n
      ),
      'ref_columns', (
        select json_agg(a.attname order by k.i)
        from unnest(con.confkey) with ordinality k(n, i)
        join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.n
      )
    ))
    from pg_constraint con
    join pg_class cl on cl.oid = con.conrelid join pg_namespace n on n.oid = cl.relnamespace
    join pg_class fcl on fcl.oid = con.confrelid join pg_namespace fn on fn.oid = fcl.relnamespace
    where con.contype = 'f' and n.nspname = $1 and fn.nspname = $1
  ), '[]')
)::text as cache`;

interface RawCache {
  tables: {
    name: string;
    kind: "table" | "view";
    columns: {
      name: string;
      type: string;
      udt: string;
      nullable: boolean;
      has_default: boolean;
      generated: boolean;
    }[];
    uniques: { primary: boolean; columns: string[] }[];
  }[];
  fks: { name: string; table: string; ref_table: string; columns: string[]; ref_columns: string[] }[];
}

/** Reads tables, columns, types, keys and foreign keys of the exposed schema from the catalog. */
export async function introspect(db: Queryable): Promise<SchemaCache> {
  const [row] = await db.query<{ cache: string }>(INTROSPECT, [EXPOSED_SCHEMA]);
  const raw = JSON.parse(row!.cache) as RawCache;
  const tables = new Map<string, TableInfo>();
  for (const t of raw.tables) {
    const columns = new Map<string, ColumnInfo>();
    for (const c of t.columns) {
      columns.set(c.name, {
        name: c.name,
        type: c.type,
        udt: c.udt,
        nullable: c.nullable,
        hasDefault: c.has_default,
        generated: c.generated,
      });
    }
    tables.set(t.name, {
      name: t.name,
      kind: t.kind,
      columns,
      primaryKey: t.uniques.find((u) => u.primary)?.columns ?? [],
      uniques: t.uniques.map((u) => u.columns),
    });
  }
  const foreignKeys = raw.fks.map((f) => ({
    name: f.name,
    table: f.table,
    columns: f.columns,
    refTable: f.ref_table,
    refColumns: f.ref_columns,
  }));
  return { tables, foreignKeys, loadedAt: Date.now() };
}
