import { type Db, type Queryable, quoteIdent } from "../driver.ts";
import { fnv1a } from "../../lib/fnv.ts";

/** A column of an exposed table. */
export interface ColumnInfo {
  name: string;
  /** `format_type` of the column, e.g. `integer`, `text[]`, `character varying(20)`. */
  type: string;
  /** The type's name in pg_type, e.g. `int4`, `_text`, `tsvector`, or a domain's. */
  udt: string;
  /** A domain's base type's name in pg_type, through domains of domains. */
  base?: string;
  nullable: boolean;
  hasDefault: boolean;
  generated: boolean;
  /** The column's default expression (SQL from the catalog), which `Prefer: missing=default` evaluates. */
  default?: string;
  /**
   * Domain representations: the functions of the implicit casts registered for the column's domain, quoted and
   * qualified: to json (reading), from json (writing) and from text (filter values).
   */
  toJson?: string;
  fromJson?: string;
  fromText?: string;
}

/** A foreign key between two exposed tables. */
export interface ForeignKey {
  name: string;
  table: string;
  columns: string[];
  refTable: string;
  refColumns: string[];
  /** Its columns are a primary key or unique constraint of its table: one-to-one (PostgREST's O2O). */
  oneToOne: boolean;
}

/** A table or view of the exposed schema. */
export interface TableInfo {
  name: string;
  kind: "table" | "view";
  columns: Map<string, ColumnInfo>;
  primaryKey: string[];
  /** Primary key and unique constraints, each as its list of columns. */
  uniques: string[][];
  /** What the table (or an auto-updatable view) takes: POST, PATCH, DELETE (`OPTIONS` lists them). */
  insertable: boolean;
  updatable: boolean;
  deletable: boolean;
  /** Computed fields by name: in `select=`, filters and `order=`, never in `*`. */
  computed?: Map<string, ComputedField>;
}

/** A computed field: a function of the table's row (`full_name(people)`), selectable like a column. */
export interface ComputedField {
  name: string;
  /** The function, in the same schema. */
  function: string;
  /** `format_type` of its result. */
  type: string;
  /** Its result type's name in pg_type. */
  udt: string;
}

/** A computed relationship: a function of `table`'s row returning rows of `target`, embedded like a table. */
export interface ComputedRelationship {
  function: string;
  table: string;
  target: string;
  /** Returns one row (`returns target`, or `setof target` with `rows 1`). */
  toOne: boolean;
}

/** An input parameter of a function (IN, INOUT or VARIADIC), in declaration order. */
export interface FunctionParam {
  /** "" for an unnamed parameter (callable by position only). */
  name: string;
  /** `format_type` of the parameter, e.g. `integer`, `text[]`. */
  type: string;
  /** The base type's name in pg_type, e.g. `int4`, `jsonb`. */
  udt: string;
  /** False when the parameter has a default. */
  required: boolean;
  variadic: boolean;
}

/** What a function returns: nothing, one value, one row, or a set of either. */
export interface FunctionResult {
  kind: "void" | "scalar" | "composite";
  set: boolean;
  /** `format_type` of the return type (of a scalar: its type). */
  type: string;
  /** The return type's name in pg_type, e.g. `int4`, `jsonb`, `void`. */
  udt: string;
  /** The columns of a composite result (a table's row type, `returns table (…)`, OUT parameters). */
  columns: ColumnInfo[];
  /** The exposed table whose row type the function returns, so its rows embed through that table's keys. */
  table: string | null;
  /** The return type's oid, of a scalar (a media type handler's domain is one). */
  oid?: number;
}

/** A function of the exposed schema, callable through `/rpc/{name}`. */
export interface FunctionInfo {
  name: string;
  params: FunctionParam[];
  result: FunctionResult;
  /** `i`mmutable, `s`table or `v`olatile. */
  volatility: "i" | "s" | "v";
  /**
   * The settings of its `set` clause, names lower-case (absent: none). Those the project hoists (PostgREST's
   * db-hoisted-tx-settings) its call's whole transaction takes; the others stay the function's own.
   */
  settings?: [string, string][];
}

/**
 * A media type handler (PostgREST's Media Type Handlers): a domain named after a media type (`"text/csv"`,
 * `"application/vnd.geo+json"`, `"*∕*"`) returned by an aggregate over a relation's rows (or `anyelement`), or by
 * a function (not a set) of this schema.
 */
export interface MediaHandler {
  /** The media type it answers, as PostgREST decodes the domain's name lower-case (`*∕*`: any). */
  mediaType: string;
  /** Its `Content-Type`, from the domain's name as written (`*∕*`: `application/octet-stream`). */
  resolved: string;
  /**
   * An aggregate over the rows of `target` (a table or view of this schema; null: `anyelement`, any resource), or
   * a domain some function of this schema returns (`cast`: the value of a call to such a function is cast to it).
   */
  kind: "aggregate" | "cast";
  target: string | null;
  /** The domain's oid, of a `cast` handler: it answers the calls to the functions (overloads) returning it. */
  domain?: number;
  /** The aggregate or the domain, quoted and qualified. */
  sql: string;
  /** The domain is over `bytea`: the answer is its bytes. */
  binary: boolean;
}

/** The settings of the request roles in the catalog (`alter role … [in database …] set`), by role. */
export type RoleSettings = Record<string, Record<string, string>>;

/** What the data API knows of a project's exposed schema (`public`). */
export interface SchemaCache {
  /** The schema described (one of the exposed schemas). */
  schema: string;
  tables: Map<string, TableInfo>;
  foreignKeys: ForeignKey[];
  /** Functions by name (overloads share a name). */
  functions: Map<string, FunctionInfo[]>;
  /** Functions that embed a table's related rows, by the name they embed under. */
  computedRelationships?: ComputedRelationship[];
  /** Tables with a many-to-many through a junction of a schema that is not exposed (PostgREST drops it). */
  internalJunctionEnds?: string[];
  /** The request roles' own settings, which `set role` does not apply (PostgREST applies them per request). */
  roleSettings?: RoleSettings;
  /** Media type handlers of this schema's resources (and `anyelement` ones of the exposed schemas). */
  mediaHandlers?: MediaHandler[];
  loadedAt: number;
}

/** The exposed schema when none is configured. */
export const EXPOSED_SCHEMA = "public";

// One round trip, JSON text so both drivers give the same shape.
const INTROSPECT = `
select json_build_object(
  'tables', coalesce((
    select json_agg(json_build_object(
      'name', c.relname,
      'oid', c.oid::int8,
      'kind', case when c.relkind in ('r', 'p', 'f') then 'table' else 'view' end,
      -- A view's query tree, whose target list says which table column each of its columns comes from.
      'query', (select r.ev_action::text from pg_rewrite r where r.ev_class = c.oid and r.rulename = '_RETURN'),
      'updatable', case when c.relkind in ('r', 'p') then 28 else pg_relation_is_updatable(c.oid, true) end,
      'columns', coalesce((
        select json_agg(json_build_object(
          'name', a.attname,
          'attnum', a.attnum,
          'type', format_type(a.atttypid, a.atttypmod),
          'udt', t.typname,
          -- A domain's base type, through domains of domains (PostgREST reads a tsvector domain as a tsvector).
          'base', case when t.typtype = 'd' then (
            with recursive chain(oid, depth) as (
              select t.typbasetype, 1
              union all
              select b.typbasetype, c.depth + 1 from chain c join pg_type b on b.oid = c.oid where b.typtype = 'd'
            )
            select b.typname from chain c join pg_type b on b.oid = c.oid order by c.depth desc limit 1
          ) end,
          'nullable', not a.attnotnull,
          'has_default', a.atthasdef or a.attidentity <> '',
          'generated', a.attgenerated <> '',
          -- The default as PostgREST reads it (a domain's, an identity's sequence), for missing=default, its
          -- names as the project's sessions resolve them (db/migrations/project/0192_column_default.sql).
          'default', case
            when t.typbasetype <> 0 and ad.adbin is null then platform.qualified_default(t.typdefaultbin, 0)
            when a.attidentity = 'd' then format('nextval(%L)',
              pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname))
            when a.attgenerated <> '' then null
            when ad.adbin is not null then platform.qualified_default(ad.adbin, ad.adrelid)
          end
        ) order by a.attnum)
        from pg_attribute a join pg_type t on t.oid = a.atttypid
        left join pg_attrdef ad on ad.adrelid = a.attrelid and ad.adnum = a.attnum
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
    -- Partitions are not resources: PostgREST reads their partitioned table only.
    where n.nspname = $1 and c.relkind in ('r', 'v', 'm', 'f', 'p') and not c.relispartition
  ), '[]'),
  -- Domain representations: implicit casts by function between a domain and json or text.
  'representations', coalesce((
    select json_agg(json_build_object(
      'domain', case when src.typtype = 'd' then src.typname else dst.typname end,
      'direction', case when src.typtype = 'd' then 'to_json' when src.typname = 'json' then 'from_json'
        else 'from_text' end,
      'schema', fns.nspname, 'function', f.proname
    ))
    from pg_cast c
    join pg_type src on src.oid = c.castsource join pg_type dst on dst.oid = c.casttarget
    join pg_proc f on f.oid = c.castfunc join pg_namespace fns on fns.oid = f.pronamespace
    where c.castcontext = 'i' and c.castmethod = 'f'
      and ((src.typtype = 'd' and dst.typname = 'json') or (dst.typtype = 'd' and src.typname in ('json', 'text')))
  ), '[]'),
  -- The primary keys of the relations the exposed schema's views read from, by attribute number.
  'view_keys', coalesce((
    select json_agg(json_build_object('oid', con.conrelid::int8, 'attnums', con.conkey))
    from pg_constraint con
    where con.contype = 'p' and con.conrelid in (
      select d.refobjid from pg_depend d
      join pg_rewrite r on r.oid = d.objid and d.classid = 'pg_rewrite'::regclass
      join pg_class v on v.oid = r.ev_class join pg_namespace vn on vn.oid = v.relnamespace
      where vn.nspname = $1 and v.relkind in ('v', 'm')
    )
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
      ),
      'one_to_one', exists (select 1 from pg_constraint u where u.conrelid = con.conrelid
        and u.contype in ('p', 'u') and array(select unnest(u.conkey) order by 1) = array(select unnest(con.conkey) order by 1))
    -- PostgREST's order (its candidates in PGRST201 follow it), not the catalog's physical one, which moves.
    ) order by con.conrelid, con.conname)
    from pg_constraint con
    join pg_class cl on cl.oid = con.conrelid join pg_namespace n on n.oid = cl.relnamespace
    join pg_class fcl on fcl.oid = con.confrelid join pg_namespace fn on fn.oid = fcl.relnamespace
    -- A partitioned table's foreign key is copied to each partition, and to each partition it references; the
    -- copies (conparentid <> 0) are not relationships (PostgREST's allM2OandO2ORels).
    where con.contype = 'f' and n.nspname = $1 and fn.nspname = $1 and con.conparentid = 0
  ), '[]'),
  -- The foreign keys of the tables of other schemas the schema's views read (PostgREST sees a view's
  -- relationships through its source tables, whatever their schema), by oid and attribute numbers.
  'source_fks', coalesce((
    with read as (
      select d.refobjid as oid from pg_depend d
      join pg_rewrite r on r.oid = d.objid and d.classid = 'pg_rewrite'::regclass
      join pg_class v on v.oid = r.ev_class join pg_namespace vn on vn.oid = v.relnamespace
      where vn.nspname = $1 and v.relkind in ('v', 'm')
    )
    select json_agg(json_build_object(
      'name', con.conname, 'oid', con.conrelid::int8, 'attnums', con.conkey,
      'ref_oid', con.confrelid::int8, 'ref_attnums', con.confkey,
      'one_to_one', exists (select 1 from pg_constraint u where u.conrelid = con.conrelid
        and u.contype in ('p', 'u') and array(select unnest(u.conkey) order by 1) = array(select unnest(con.conkey) order by 1))
    ))
    from pg_constraint con
    join pg_class cl on cl.oid = con.conrelid join pg_namespace n on n.oid = cl.relnamespace
    join pg_class fcl on fcl.oid = con.confrelid join pg_namespace fn on fn.oid = fcl.relnamespace
    where con.contype = 'f' and con.conparentid = 0 and not (n.nspname = $1 and fn.nspname = $1)
      and (n.nspname = $1 or con.conrelid in (select oid from read))
      and (fn.nspname = $1 or con.confrelid in (select oid from read))
  ), '[]'),
  -- The tables joined to another of the schema by a junction table of a schema that is not exposed: PostgREST
  -- drops that many-to-many, but still counts them as tables with relationships (in its PGRST200 hint).
  'internal_junction_ends', coalesce((
    select json_agg(distinct t.relname)
    from pg_constraint c1
    join pg_constraint c2 on c2.conrelid = c1.conrelid and c2.contype = 'f' and c2.conname <> c1.conname
    join pg_constraint pk on pk.conrelid = c1.conrelid and pk.contype = 'p'
    join pg_class j on j.oid = c1.conrelid join pg_namespace jn on jn.oid = j.relnamespace
    join pg_class t on t.oid = c1.confrelid join pg_namespace tn on tn.oid = t.relnamespace
    join pg_class ft on ft.oid = c2.confrelid join pg_namespace fn on fn.oid = ft.relnamespace
    where c1.contype = 'f' and c1.conparentid = 0 and c2.conparentid = 0
      and tn.nspname = $1 and fn.nspname = $1
      and jn.nspname not in (select json_array_elements_text($2::text::json))
      and (c1.conkey || c2.conkey) <@ pk.conkey
      -- Many-to-one keys only: a key that is unique too is one-to-one, no junction.
      and not exists (select 1 from pg_constraint u where u.conrelid = j.oid and u.contype in ('p', 'u')
        and (array(select unnest(u.conkey) order by 1) = array(select unnest(c1.conkey) order by 1)
          or array(select unnest(u.conkey) order by 1) = array(select unnest(c2.conkey) order by 1)))
  ), '[]'),
  -- Plain functions (no aggregates, procedures, triggers). Arguments and results of pseudo-types (internal,
  -- cstring, anyelement…) cannot be given or read as JSON: such functions are left out, but for void and
  -- record (PostgREST calls a record without OUT parameters as one value, its row). A domain over a composite
  -- type returns that type's rows (bt: the return type through its domains, as PostgREST's base_types).
  'functions', coalesce((
    select json_agg(f) from (
      select p.proname as name, p.provolatile as volatility, p.proretset as set,
        p.pronargs - p.pronargdefaults as required,
        case when bt.typtype = 'c' then 'c' else rt.typtype end as ret_kind, rt.typname as ret_udt,
        p.prorettype::int8 as ret_oid, format_type(p.prorettype, null) as ret_type,
        (select c.relname from pg_class c where c.oid = bt.typrelid and c.relnamespace = n.oid
          and c.relkind in ('r', 'v', 'm', 'f', 'p')) as ret_table,
        coalesce((
          select json_agg(json_build_object(
            'name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'udt', t.typname
          ) order by a.attnum)
          from pg_attribute a join pg_type t on t.oid = a.atttypid
          where bt.typtype = 'c' and a.attrelid = bt.typrelid and a.attnum > 0 and not a.attisdropped
        ), '[]') as ret_columns,
        coalesce((
          select json_agg(json_build_object(
            'name', coalesce(p.proargnames[a.i], ''), 'mode', coalesce(p.proargmodes[a.i], 'i'),
            'type', format_type(a.t, null), 'udt', t.typname, 'pseudo', t.typtype = 'p'
          ) order by a.i)
          from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) with ordinality a(t, i)
          join pg_type t on t.oid = a.t
        ), '[]') as args,
        coalesce(p.proconfig, '{}') as config
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_type rt on rt.oid = p.prorettype
      join lateral (
        with recursive chain(oid, depth) as (
          select p.prorettype, 0
          union all
          select t.typbasetype, c.depth + 1 from chain c join pg_type t on t.oid = c.oid where t.typtype = 'd'
        )
        select t.typtype, t.typrelid from chain c join pg_type t on t.oid = c.oid order by c.depth desc limit 1
      ) bt on true
      where n.nspname = $1 and p.prokind = 'f'
        and (rt.typtype <> 'p' or rt.typname in ('void', 'record'))
      -- A stable order; overloads are then sorted as PostgREST sorts them (db/rest/rpc.ts).
      order by p.oid
    ) f
  ), '[]'),
  -- Functions of one table row: a computed field when they return a value, a computed relationship when they
  -- return rows of a table (one row when not a set, or a set of 'rows 1').
  'computed', coalesce((
    select json_agg(json_build_object(
      'name', p.proname, 'table', ac.relname, 'ret_table', rc.relname,
      'type', format_type(p.prorettype, null), 'udt', rt.typname,
      'set', p.proretset, 'single', not p.proretset or p.prorows = 1
    ))
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    join pg_class ac on ac.reltype = p.proargtypes[0] and ac.relnamespace = n.oid
      and ac.relkind in ('r', 'v', 'm', 'f', 'p')
    join pg_type rt on rt.oid = p.prorettype
    left join pg_class rc on rc.reltype = p.prorettype and rc.relnamespace = n.oid
      and rc.relkind in ('r', 'v', 'm', 'f', 'p')
    where n.nspname = $1 and p.prokind = 'f' and p.pronargs = 1 and rt.typtype <> 'p'
  ), '[]'),
  -- Media type handlers, as PostgREST reads them: domains named after a media type, returned by an aggregate of
  -- an exposed schema over one relation's row type (or anyelement), or by a function (not a set) of this schema.
  'media_handlers', coalesce((
    with media_types as (
      select t.oid, t.typname, lower(t.typname) as media_type, tn.nspname as schema,
        case t.typname when '*/*' then 'application/octet-stream' else t.typname end as resolved,
        -- A domain takes its base type's output function, at any depth: bytea's is byteaout.
        t.typoutput = 'pg_catalog.byteaout'::regproc as "binary"
      from pg_type t join pg_namespace tn on tn.oid = t.typnamespace
      where t.typtype = 'd' and (t.typname ~ '^[A-Za-z0-9.-]+/[A-Za-z0-9.+-]+$' or t.typname = '*/*')
    )
    select json_agg(h) from (
      select 'aggregate' as kind, ps.nspname as schema, p.proname as name,
        case when a.oid = 'pg_catalog.anyelement'::regtype then null else an.nspname end as target_schema,
        case when a.oid = 'pg_catalog.anyelement'::regtype then null else a.typname end as target,
        m.media_type, m.resolved, m."binary", null::int8 as domain
      from media_types m
      join pg_proc p on p.prorettype = m.oid
      join pg_namespace ps on ps.oid = p.pronamespace
      join pg_aggregate g on g.aggfnoid = p.oid
      join pg_type a on a.oid = p.proargtypes[0]
      join pg_namespace an on an.oid = a.typnamespace
      where ps.nspname in (select json_array_elements_text($2::text::json)) and p.pronargs = 1
        and (a.oid = 'pg_catalog.anyelement'::regtype or exists (select 1 from pg_class c
          where c.reltype = a.oid and c.relkind in ('v', 'r', 'm', 'f', 'p')))
      union all
      select distinct 'cast', m.schema, m.typname, ps.nspname, null, m.media_type, m.resolved, m."binary", m.oid::int8
      from pg_proc p join pg_namespace ps on ps.oid = p.pronamespace
      join media_types m on m.oid = p.prorettype
      where ps.nspname = $1 and not p.proretset and p.prokind = 'f'
    ) h
  ), '[]'),
  -- The request roles' settings, as PostgREST reads them: those of this database over the role-wide ones, and
  -- only settings any role may change (context user); role and session_authorization never.
  'role_settings', coalesce((
    select json_agg(json_build_array(s.role, s.name, s.value)) from (
      select distinct on (r.rolname, kv.name) r.rolname as role, ps.name, kv.value
      from pg_db_role_setting d
      join pg_roles r on r.oid = d.setrole
      cross join lateral (
        select substr(c, 1, strpos(c, '=') - 1) as name, substr(c, strpos(c, '=') + 1) as value
        from unnest(d.setconfig) c
      ) kv
      join pg_settings ps on lower(ps.name) = lower(kv.name) and ps.context = 'user'
      where r.rolname in ('anon', 'authenticated', 'service_role')
        and lower(kv.name) not in ('role', 'session_authorization')
        and d.setdatabase in (0, (select oid from pg_database where datname = current_database()))
      order by r.rolname, kv.name, d.setdatabase desc
    ) s
  ), '[]')
)::text as cache`;

interface RawCache {
  tables: {
    name: string;
    oid: number;
    kind: "table" | "view";
    query: string | null;
    /** pg_relation_is_updatable's bits: 8 insert, 4 update, 16 delete. */
    updatable: number;
    columns: {
      name: string;
      attnum: number;
      type: string;
      udt: string;
      base: string | null;
      nullable: boolean;
      has_default: boolean;
      generated: boolean;
      default: string | null;
    }[];
    uniques: { primary: boolean; columns: string[] }[];
  }[];
  fks: {
    name: string;
    table: string;
    ref_table: string;
    columns: string[];
    ref_columns: string[];
    one_to_one: boolean;
  }[];
  view_keys?: { oid: number; attnums: number[] }[];
  internal_junction_ends?: string[];
  source_fks?: {
    name: string;
    oid: number;
    attnums: number[];
    ref_oid: number;
    ref_attnums: number[];
    one_to_one: boolean;
  }[];
  representations: {
    domain: string;
    direction: "to_json" | "from_json" | "from_text";
    schema: string;
    function: string;
  }[];
  functions: RawFunction[];
  role_settings: [string, string, string][];
  media_handlers: {
    kind: "aggregate" | "cast";
    schema: string;
    name: string;
    target_schema: string | null;
    target: string | null;
    media_type: string;
    resolved: string;
    binary: boolean;
    domain: number | null;
  }[];
  computed: {
    name: string;
    table: string;
    ret_table: string | null;
    type: string;
    udt: string;
    set: boolean;
    single: boolean;
  }[];
}

interface RawFunction {
  name: string;
  volatility: "i" | "s" | "v";
  set: boolean;
  required: number;
  ret_kind: string;
  ret_udt: string;
  ret_oid: number;
  ret_type: string;
  ret_table: string | null;
  ret_columns: { name: string; type: string; udt: string }[];
  args: { name: string; mode: string; type: string; udt: string; pseudo: boolean }[];
  /** `pg_proc.proconfig`: `name=value` each. */
  config: string[];
}

function resultColumn(c: { name: string; type: string; udt: string }): ColumnInfo {
  return { name: c.name, type: c.type, udt: c.udt, nullable: true, hasDefault: false, generated: false };
}

/** The types of a function's one unnamed parameter that PostgREST calls it with (the body whole). */
const SINGLE_UNNAMED_TYPES = new Set(["bytea", "json", "jsonb", "text", "xml"]);

/** A function of the catalog as the data API calls it, or null when it cannot be called with JSON. */
function functionInfo(f: RawFunction): FunctionInfo | null {
  const inputs = f.args.filter((a) => a.mode === "i" || a.mode === "b" || a.mode === "v");
  const outputs = f.args.filter((a) => a.mode === "o" || a.mode === "b" || a.mode === "t");
  if (inputs.some((a) => a.pseudo)) return null;
  // PostgREST's callable functions: no unnamed parameter, or one when the first is of a type a body can be
  // whole (a computed field's row, an unnamed integer… are not functions of the API).
  const unnamed = inputs.filter((a) => a.name === "").length;
  if (unnamed > 1 || (unnamed === 1 && !SINGLE_UNNAMED_TYPES.has(inputs[0]!.udt))) return null;
  const params = inputs.map((a, i) => ({
    name: a.name,
    type: a.type,
    udt: a.udt,
    required: i < f.required,
    variadic: a.mode === "v",
  }));
  let result: FunctionResult;
  if (f.ret_udt === "void") {
    result = { kind: "void", set: f.set, type: f.ret_type, udt: f.ret_udt, columns: [], table: null };
  } else if (f.ret_kind === "c") {
    result = {
      kind: "composite",
      set: f.set,
      type: f.ret_type,
      udt: f.ret_udt,
      columns: f.ret_columns.map(resultColumn),
      table: f.ret_table,
    };
  } else if (outputs.length > 0) {
    // `returns table (…)` or OUT parameters, even one of them: the columns are those parameters (PostgREST
    // reads any TABLE, INOUT or OUT parameter as a composite result).
    if (outputs.some((a) => a.pseudo)) return null;
    const columns = outputs.map(resultColumn);
    result = { kind: "composite", set: f.set, type: f.ret_type, udt: f.ret_udt, columns, table: null };
  } else {
    result = {
      kind: "scalar",
      set: f.set,
      type: f.ret_type,
      udt: f.ret_udt,
      columns: [],
      table: null,
      oid: Number(f.ret_oid),
    };
  }
  const info: FunctionInfo = { name: f.name, params, result, volatility: f.volatility };
  const settings = f.config.filter((c) => c.includes("="))
    .map((c): [string, string] => [c.slice(0, c.indexOf("=")).toLowerCase(), c.slice(c.indexOf("=") + 1)]);
  if (settings.length > 0) info.settings = settings;
  return info;
}

/** The cast functions of each domain by its name, as a column carries them. */
function domainCasts(
  raw: RawCache["representations"],
): Map<string, Pick<ColumnInfo, "toJson" | "fromJson" | "fromText">> {
  const key = { to_json: "toJson", from_json: "fromJson", from_text: "fromText" } as const;
  const casts = new Map<string, Pick<ColumnInfo, "toJson" | "fromJson" | "fromText">>();
  for (const r of raw) {
    const entry = casts.get(r.domain) ?? {};
    entry[key[r.direction]] = `${quoteIdent(r.schema)}.${quoteIdent(r.function)}`;
    casts.set(r.domain, entry);
  }
  return casts;
}

/**
 * Reads tables, columns, types, keys and foreign keys of the exposed schema `schema` from the catalog; `exposed`:
 * all the exposed schemas (media type handlers may be aggregates of another).
 */
export async function introspect(
  db: Queryable,
  schema: string = EXPOSED_SCHEMA,
  exposed: readonly string[] = [schema],
): Promise<SchemaCache> {
  return schemaCacheOf(schema, await catalogOf(db, schema, exposed));
}

/** The statement that turns PostgreSQL's JIT off for the transaction it runs in. */
export const NO_JIT = "set local jit = off";

/**
 * What the catalog says of schema `schema` (the JSON {@linkcode schemaCacheOf} reads). On PostgreSQL it is asked
 * with JIT off: the query's estimated cost passes `jit_above_cost`, and compiling its plan with LLVM took 600–720
 * ms of a 660–820 ms run on a new project, against 32–35 ms for the whole query without (PostgreSQL 15). Every
 * load of the schema cache paid it: a start's first request, each reload after DDL or a missing table. PGlite
 * has no JIT.
 */
async function catalogOf(db: Queryable, schema: string, exposed: readonly string[]): Promise<string> {
  const params = [schema, JSON.stringify(exposed)];
  if ((db as Partial<Db>).kind === "postgres" && (db as Partial<Db>).pipeline) {
    const [, rows] = await (db as Db).pipeline(
      [{ sql: NO_JIT, params: [] }, { sql: INTROSPECT, params }],
      { end: "rollback", readOnly: true },
    );
    return (rows![0] as { cache: string }).cache;
  }
  const [row] = await db.query<{ cache: string }>(INTROSPECT, params);
  return row!.cache;
}

/**
 * The schema caches of every exposed schema, as text to keep beside a database that closes (its rest file): the
 * catalog's answers, which {@linkcode schemaCachesOfMemo} reads back without asking the catalog again.
 */
export async function schemaMemo(db: Queryable, exposed: readonly string[]): Promise<string> {
  const catalogs: string[] = [];
  for (const schema of exposed) catalogs.push(await catalogOf(db, schema, exposed));
  return JSON.stringify({ version: memoVersion(), exposed, catalogs });
}

let version: string | undefined;

/**
 * What a memo's catalogs were read with: a hash of the introspection's text. A memo of another version of the
 * platform, whose introspection read other fields, is not read.
 */
export function memoVersion(): string {
  return version ??= fnv1a(INTROSPECT).toString(16);
}

/**
 * The schema caches a memo of {@linkcode schemaMemo} holds, by schema, with the exposed schemas it was made for;
 * undefined when it cannot be read or was made by another version of the introspection.
 */
export function schemaCachesOfMemo(
  memo: string,
): { exposed: string[]; caches: Map<string, SchemaCache> } | undefined {
  try {
    const parsed = JSON.parse(memo) as { version?: unknown; exposed?: unknown; catalogs?: unknown };
    const { exposed, catalogs } = parsed;
    if (parsed.version !== memoVersion()) return undefined;
    if (!Array.isArray(exposed) || !Array.isArray(catalogs) || catalogs.length !== exposed.length) {
      return undefined;
    }
    if (exposed.length === 0 || !exposed.every((s) => typeof s === "string")) return undefined;
    const caches = new Map(exposed.map((schema, i) => [schema, schemaCacheOf(schema, String(catalogs[i]))]));
    return { exposed, caches };
  } catch {
    return undefined;
  }
}

/** The schema cache of schema `schema` from the catalog's answer. */
function schemaCacheOf(schema: string, catalog: string): SchemaCache {
  const raw = JSON.parse(catalog) as RawCache;
  const tables = new Map<string, TableInfo>();
  const casts = domainCasts(raw.representations);
  const sources = viewSources(raw);
  const viewKeys = viewPrimaryKeys(raw, sources);
  for (const t of raw.tables) {
    const columns = new Map<string, ColumnInfo>();
    for (const c of t.columns) {
      columns.set(c.name, {
        name: c.name,
        type: c.type,
        udt: c.udt,
        ...(c.base === null ? {} : { base: c.base }),
        nullable: c.nullable,
        hasDefault: c.has_default,
        generated: c.generated,
        ...(c.default === null ? {} : { default: c.default }),
        ...casts.get(c.udt),
      });
    }
    tables.set(t.name, {
      name: t.name,
      kind: t.kind,
      columns,
      primaryKey: t.uniques.find((u) => u.primary)?.columns ?? viewKeys.get(t.name) ?? [],
      uniques: t.uniques.map((u) => u.columns),
      insertable: (t.updatable & 8) !== 0,
      updatable: (t.updatable & 4) !== 0,
      deletable: (t.updatable & 16) !== 0,
    });
  }
  const tableKeys = raw.fks.map((f) => ({
    name: f.name,
    table: f.table,
    columns: f.columns,
    refTable: f.ref_table,
    refColumns: f.ref_columns,
    oneToOne: f.one_to_one,
  }));
  const foreignKeys = [...tableKeys, ...viewForeignKeys(raw, tableKeys, sources)];
  const functions = new Map<string, FunctionInfo[]>();
  for (const f of raw.functions) {
    const info = functionInfo(f);
    if (info) functions.set(info.name, [...functions.get(info.name) ?? [], info]);
  }
  const computedRelationships: ComputedRelationship[] = [];
  for (const c of raw.computed) {
    const table = tables.get(c.table)!;
    if (c.ret_table !== null) {
      computedRelationships.push({ function: c.name, table: c.table, target: c.ret_table, toOne: c.single });
    } else if (!c.set && !table.columns.has(c.name)) {
      table.computed ??= new Map();
      table.computed.set(c.name, { name: c.name, function: c.name, type: c.type, udt: c.udt });
    }
  }
  const roleSettings: RoleSettings = {};
  for (const [role, name, value] of raw.role_settings) (roleSettings[role] ??= {})[name] = value;
  const mediaHandlers: MediaHandler[] = raw.media_handlers
    .filter((h) => h.target === null || h.target_schema === schema)
    .map((h) => ({
      mediaType: h.media_type,
      resolved: h.resolved,
      kind: h.kind,
      target: h.target,
      ...(h.domain === null ? {} : { domain: Number(h.domain) }),
      sql: `${quoteIdent(h.schema)}.${quoteIdent(h.name)}`,
      binary: h.binary,
    }));
  return {
    schema,
    tables,
    foreignKeys,
    functions,
    computedRelationships,
    internalJunctionEnds: raw.internal_junction_ends ?? [],
    roleSettings,
    mediaHandlers,
    loadedAt: Date.now(),
  };
}

/**
 * The primary key PostgREST infers for a view: the view's columns that come straight from a primary key column
 * of a table it reads (through other views of the schema too), the first view column for each.
 */
function viewPrimaryKeys(raw: RawCache, sources: ViewSources): Map<string, string[]> {
  const keys = new Map((raw.view_keys ?? []).map((k) => [Number(k.oid), k.attnums]));
  const byOid = new Map(raw.tables.map((t) => [Number(t.oid), t]));
  const out = new Map<string, string[]>();
  for (const t of raw.tables) {
    const columnsFrom = sources.get(t.name);
    if (!columnsFrom) continue;
    // Every primary key column of the tables read that the view shows (the first view column of each), as
    // PostgREST's view key dependencies: a view of two tables has both keys.
    const key: string[] = [];
    for (const [oid, attnums] of keys) {
      if (byOid.get(oid)?.query) continue;
      for (const n of attnums) {
        const c = columnsFrom.get(`${oid}:${n}`)?.[0];
        if (c !== undefined && !key.includes(c)) key.push(c);
      }
    }
    if (key.length > 0) out.set(t.name, key);
  }
  return out;
}

/** Per view of the schema: "oid:attnum" of a table column → the view's columns that show it. */
type ViewSources = Map<string, Map<string, string[]>>;

/**
 * For each view of the schema: the view columns that show each table column straight ("oid:attnum" of the table
 * column, following other views of the schema, → the view's columns, in their order).
 */
function viewSources(raw: RawCache): ViewSources {
  const origins = new Map<number, Map<number, [number, number]>>();
  for (const t of raw.tables) if (t.query) origins.set(Number(t.oid), targetOrigins(t.query));
  /** The table column a view column comes from, following views; undefined when it is computed. */
  const origin = (oid: number, attnum: number, depth = 0): [number, number] | undefined => {
    const o = origins.get(oid)?.get(attnum);
    if (!o || depth > 16) return undefined;
    return origins.has(o[0]) ? origin(o[0], o[1], depth + 1) : o;
  };
  const out = new Map<string, Map<string, string[]>>();
  for (const t of raw.tables) {
    if (!t.query) continue;
    const columnsFrom = new Map<string, string[]>();
    for (const c of t.columns) {
      const o = origin(Number(t.oid), c.attnum);
      if (!o) continue;
      const key = `${o[0]}:${o[1]}`;
      columnsFrom.set(key, [...(columnsFrom.get(key) ?? []), c.name]);
    }
    out.set(t.name, columnsFrom);
  }
  return out;
}

/**
 * The foreign keys PostgREST infers for views: a table's foreign key seen from a view that shows all its columns,
 * and to a view that shows all the referenced columns (view to table, table to view, view to view), named as the
 * table's constraint; the keys of the tables of other schemas the views read too, seen through those views.
 */
function viewForeignKeys(raw: RawCache, keys: ForeignKey[], sources: ViewSources): ForeignKey[] {
  const byName = new Map(raw.tables.map((t) => [t.name, t]));
  const byOid = new Map(raw.tables.map((t) => [Number(t.oid), t]));
  /**
   * Each view showing all the columns `attnums` of relation `oid`, with their columns there: every combination
   * when the view shows a column twice (PostgREST's expandKeyDepCols, one relationship each).
   */
  const viewImages = (oid: number, attnums: (number | undefined)[]): [string, string[]][] => {
    const out: [string, string[]][] = [];
    for (const [view, columnsFrom] of sources) {
      const choices = attnums.map((n) => columnsFrom.get(`${oid}:${n}`) ?? []);
      for (const cols of combinations(choices)) out.push([view, cols]);
    }
    return out;
  };
  /** The relation itself, then each view showing all of `columns` of table `table`, with their columns there. */
  const images = (table: string, columns: string[]): [string, string[]][] => {
    const t = byName.get(table);
    if (!t) return [[table, columns]];
    const attnums = columns.map((c) => t.columns.find((x) => x.name === c)?.attnum);
    return [[table, columns], ...viewImages(Number(t.oid), attnums)];
  };
  /** A table of another schema is seen through the views only; one of the schema is itself too. */
  const sourceImages = (oid: number, attnums: number[]): [string, string[]][] => {
    const t = byOid.get(oid);
    const own: [string, string[]][] = t
      ? [[t.name, attnums.map((n) => t.columns.find((c) => c.attnum === n)!.name)]]
      : [];
    return [...own, ...viewImages(oid, attnums)];
  };
  const out: ForeignKey[] = [];
  const add = (
    fk: { name: string; oneToOne: boolean },
    from: [string, string[]][],
    to: [string, string[]][],
    skip?: [string, string],
  ) => {
    for (const [table, columns] of from) {
      for (const [refTable, refColumns] of to) {
        if (skip && table === skip[0] && refTable === skip[1]) continue;
        out.push({ name: fk.name, table, columns, refTable, refColumns, oneToOne: fk.oneToOne });
      }
    }
  };
  for (const fk of keys) {
    add(fk, images(fk.table, fk.columns), images(fk.refTable, fk.refColumns), [fk.table, fk.refTable]);
  }
  for (const fk of raw.source_fks ?? []) {
    add(
      { name: fk.name, oneToOne: fk.one_to_one },
      sourceImages(Number(fk.oid), fk.attnums),
      sourceImages(Number(fk.ref_oid), fk.ref_attnums),
    );
  }
  return out;
}

/** Every way to pick one element of each list, in order (none when a list is empty). */
function combinations<T>(choices: T[][]): T[][] {
  return choices.reduce<T[][]>(
    (acc, options) => acc.flatMap((picked) => options.map((o) => [...picked, o])),
    [[]],
  );
}

/**
 * Reads a view's rule (pg_node_tree text): for each entry of its top query's target list, the table column it
 * comes from (`:resorigtbl`, `:resorigcol`), by the entry's number (`:resno`). Nested queries are skipped.
 */
export function targetOrigins(tree: string): Map<number, [number, number]> {
  const out = new Map<number, [number, number]>();
  let depth = 0;
  let inList = false;
  let entry: Record<string, number> = {};
  for (let i = 0; i < tree.length; i++) {
    const c = tree[i]!;
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === "{" || c === "(") depth++;
    else if (c === "}" || c === ")") {
      depth--;
      if (inList && depth === 3 && c === "}") {
        if (entry.resno && entry.resorigtbl) out.set(entry.resno, [entry.resorigtbl, entry.resorigcol ?? 0]);
        entry = {};
      }
      if (inList && depth < 3) break;
    } else if (c === ":") {
      const m = /^:([A-Za-z]+) /.exec(tree.slice(i, i + 40));
      if (!m) continue;
      if (depth === 2 && m[1] === "targetList") inList = true;
      else if (inList && depth === 4 && ["resno", "resorigtbl", "resorigcol"].includes(m[1]!)) {
        const v = /^-?\d+/.exec(tree.slice(i + m[0].length, i + m[0].length + 24));
        if (v) entry[m[1]!] = Number(v[0]);
      }
    }
  }
  return out;
}
