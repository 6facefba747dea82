import type { Queryable } from "../driver.ts";
import type { ColumnInfo, FunctionInfo, FunctionParam, SchemaCache, TableInfo } from "./schema.ts";

/**
 * PostgREST's OpenAPI root (`GET /`): the Swagger 2.0 document of one exposed schema as a role sees it, in the
 * shapes of PostgREST's `Response/OpenAPI.hs` (v12–v14): the same field names, parameters, types and formats.
 */

/** What the schema cache does not hold: comments, defaults, enum labels, lengths, and what the role may see. */
export interface OpenApiCatalog {
  /** The schema's comment: its first line the title, the rest the description. */
  description: string | null;
  tables: Map<string, {
    description: string | null;
    columns: Map<string, CatalogColumn>;
  }>;
  /** Functions the role may execute, with their comment (the first overload's). */
  functions: Map<string, { description: string | null }>;
}

/** A column's comment, default expression, enum labels and type name (no modifier, qualified outside pg_catalog). */
interface CatalogColumn {
  description: string | null;
  default: string | null;
  enum: string[] | null;
  type: string;
  /** NOT NULL on the column or on its domain (a required property). */
  not_null: boolean;
  /** The character length limit of the column or its domain, as information_schema computes it. */
  max_length: number | null;
}

// PostgREST's accessible tables (follow-privileges): owned through a role, or any table or column privilege;
// with $3 (ignore-privileges) every one of the schema.
const CATALOG = `
select json_build_object(
  'description', (select obj_description(n.oid, 'pg_namespace') from pg_namespace n where n.nspname = $1),
  'tables', coalesce((
    select json_agg(json_build_object(
      'name', c.relname,
      'description', obj_description(c.oid, 'pg_class'),
      'columns', coalesce((
        select json_agg(json_build_object(
          'name', a.attname,
          'description', col_description(c.oid, a.attnum),
          -- format_type without a modifier, a type outside pg_catalog always schema-qualified (whatever the
          -- search_path of the connection), as PostgREST names it: 'public.mood', 'public.mood[]'.
          -- A domain over a type of pg_catalog is shown as that type (PostgREST's data_type).
          'type', case
            when t.typtype = 'd' and coalesce(bb.typnamespace, bt.typnamespace) = 'pg_catalog'::regnamespace
              then format_type(coalesce(bb.oid, bt.oid), null)
            when et.typnamespace = 'pg_catalog'::regnamespace then format_type(a.atttypid, null)
            else quote_ident(en.nspname) || '.' || quote_ident(et.typname)
              || case when et.oid <> t.oid then '[]' else '' end end,
          -- A domain's default when the column has none of its own.
          'default', case when t.typtype = 'd' and d.adbin is null then pg_get_expr(t.typdefaultbin, 0)
            else pg_get_expr(d.adbin, d.adrelid) end,
          'not_null', a.attnotnull or (t.typtype = 'd' and t.typnotnull),
          'max_length', information_schema._pg_char_max_length(
            information_schema._pg_truetypid(a.*, t.*), information_schema._pg_truetypmod(a.*, t.*)),
          'enum', (select json_agg(e.enumlabel order by e.enumsortorder) from pg_enum e
            where e.enumtypid = coalesce(nullif(t.typbasetype, 0), t.oid))
        ) order by a.attnum)
        from pg_attribute a join pg_type t on t.oid = a.atttypid
        -- A domain's base type, and that one's when it is a domain too.
        left join pg_type bt on bt.oid = t.typbasetype
        left join pg_type bb on bb.oid = bt.typbasetype and bt.typtype = 'd'
        join pg_type et on et.oid = case when t.typcategory = 'A' and t.typelem <> 0 then t.typelem else t.oid end
        join pg_namespace en on en.oid = et.typnamespace
        left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum and a.attgenerated = ''
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      ), '[]')
    ))
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = $1 and c.relkind in ('r', 'v', 'm', 'f', 'p')
      and ($3::boolean or pg_has_role($2::name, c.relowner, 'USAGE')
        or has_table_privilege($2::name, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
        or has_any_column_privilege($2::name, c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))
  ), '[]'),
  'functions', coalesce((
    select json_agg(json_build_object('name', p.proname, 'description', obj_description(p.oid, 'pg_proc'))
      order by p.oid)
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = $1 and p.prokind = 'f'
      and ($3::boolean or has_function_privilege($2::name, p.oid, 'EXECUTE'))
  ), '[]')
)::text as catalog`;

interface RawCatalog {
  description: string | null;
  tables: {
    name: string;
    description: string | null;
    columns: (CatalogColumn & { name: string })[];
  }[];
  functions: { name: string; description: string | null }[];
}

/**
 * Reads what the OpenAPI document needs beyond the schema cache, for `role` in `schema`; with
 * `ignorePrivileges` (PostgREST's `openapi-mode = ignore-privileges`) every table and function of the schema.
 */
export async function openApiCatalog(
  db: Queryable,
  schema: string,
  role: string,
  options: { ignorePrivileges?: boolean } = {},
): Promise<OpenApiCatalog> {
  const [row] = await db.query<{ catalog: string }>(CATALOG, [
    schema,
    role,
    options.ignorePrivileges === true,
  ]);
  const raw = JSON.parse(row!.catalog) as RawCatalog;
  const functions = new Map<string, { description: string | null }>();
  for (const f of raw.functions) {
    if (!functions.has(f.name)) functions.set(f.name, { description: f.description });
  }
  return {
    description: raw.description,
    tables: new Map(raw.tables.map((t) => [t.name, {
      description: t.description,
      columns: new Map(t.columns.map((c) => [c.name, c])),
    }])),
    functions,
  };
}

/** Where the API is served, as the document's `host`, `basePath` and `schemes` say. */
export interface OpenApiServer {
  scheme: "http" | "https";
  /** `host:port`. */
  host: string;
  basePath: string;
}

/**
 * The PostgREST version whose OpenAPI output this follows (`info.version`, v14's two-part MAJOR.PATCH) and its
 * docs' version (`externalDocs`: the major alone).
 */
export const OPENAPI_POSTGREST_VERSION = "14.0";
const DOCS_VERSION = "v14";

type Json = Record<string, unknown>;

const MIMES = [
  "application/json",
  "application/vnd.pgrst.object+json;nulls=stripped",
  "application/vnd.pgrst.object+json",
  "text/csv",
];
const PROC_MIMES = MIMES.slice(0, 3);

/** A column's type as PostgREST names it: `format_type` without a modifier (`character varying`, `text[]`). */
function baseType(type: string): string {
  return type.replace(/\(\d+(?:,\s*\d+)?\)/g, "");
}

/** PostgREST's toSwaggerType (undefined: json and jsonb, which have no type). */
function swaggerType(type: string): string | undefined {
  switch (type) {
    case "character varying":
    case "character":
    case "text":
      return "string";
    case "boolean":
      return "boolean";
    case "smallint":
    case "integer":
    case "bigint":
      return "integer";
    case "numeric":
    case "real":
    case "double precision":
      return "number";
    case "json":
    case "jsonb":
      return undefined;
    default:
      return type.endsWith("[]") ? "array" : "string";
  }
}

/** PostgREST's toSwaggerFormat. */
function swaggerFormat(type: string): string {
  return type === "smallint" || type === "integer" ? "int32" : type === "bigint" ? "int64" : type;
}

/** `items` of an array type: the element's type. */
function arrayItems(type: string): Json | undefined {
  if (swaggerType(type) !== "array") return undefined;
  const element = swaggerType(type.slice(0, -2));
  return element === undefined ? {} : { type: element };
}

/** PostgREST's parseDefault: a string-typed default loses its cast and quotes; one that is not JSON is left out. */
function parseDefault(type: string, expr: string): unknown {
  let text = expr;
  if (swaggerType(type) === "string") {
    const stripped = expr.endsWith(`::${type}`) ? expr.slice(0, -(type.length + 2)) : null;
    text = JSON.stringify(stripped === null ? expr : stripped.replace(/^'+|'+$/g, ""));
  }
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Drops the keys whose value is undefined or null, as the Swagger encoder leaves empty fields out. */
function compact(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/** The first line of a comment (the summary or title) and the rest (the description), as PostgREST splits it. */
function splitComment(text: string | null): [string | undefined, string | undefined] {
  if (text === null) return [undefined, undefined];
  const i = text.indexOf("\n");
  if (i < 0) return [text, undefined];
  const rest = text.slice(i).replace(/^\n+/, "");
  return [text.slice(0, i), rest === "" ? undefined : rest];
}

function columnProperty(
  cache: SchemaCache,
  table: TableInfo,
  column: ColumnInfo,
  extra: CatalogColumn | undefined,
): Json {
  const type = extra?.type ?? baseType(column.type);
  const fk = cache.foreignKeys.find((f) =>
    f.table === table.name && f.columns.length === 1 && f.columns[0] === column.name
  );
  const notes = [
    ...(table.primaryKey.includes(column.name) ? ["This is a Primary Key.<pk/>"] : []),
    ...(fk
      ? [
        `This is a Foreign Key to \`${fk.refTable}.${fk.refColumns[0]}\`.<fk table='${fk.refTable}' column='${
          fk.refColumns[0]
        }'/>`,
      ]
      : []),
  ];
  const comment = extra?.description ?? null;
  const description = notes.length > 0
    ? (comment === null ? "" : `${comment}\n\n`) + ["Note:", ...notes].join("\n")
    : comment;
  const maxLength = extra?.max_length ?? /^character(?: varying)?\((\d+)\)$/.exec(column.type)?.[1];
  return compact({
    default: extra?.default == null ? undefined : parseDefault(type, extra.default),
    description,
    enum: extra?.enum ?? undefined,
    format: swaggerFormat(type),
    maxLength: maxLength === undefined ? undefined : Number(maxLength),
    type: swaggerType(type),
    items: arrayItems(type),
  });
}

function tableDefinition(cache: SchemaCache, table: TableInfo, catalog: OpenApiCatalog): Json {
  const extra = catalog.tables.get(table.name);
  const columns = [...table.columns.values()];
  const required = columns.filter((c) => extra?.columns.get(c.name)?.not_null ?? !c.nullable).map((c) =>
    c.name
  );
  return compact({
    description: extra?.description ?? undefined,
    required: required.length > 0 ? required : undefined,
    properties: Object.fromEntries(
      columns.map((c) => [c.name, columnProperty(cache, table, c, extra?.columns.get(c.name))]),
    ),
    type: "object",
  });
}

const ref = (name: string) => ({ $ref: `#/parameters/${name}` });

function preferParam(values: string[]): Json {
  return compact({
    name: "Prefer",
    description: "Preference",
    required: false,
    in: "header",
    type: "string",
    enum: values.length > 0 ? values : undefined,
  });
}

function queryParam(name: string, description: string, inHeader = false): Json {
  return { name, description, required: false, in: inHeader ? "header" : "query", type: "string" };
}

function parameterDefinitions(tables: TableInfo[], catalog: OpenApiCatalog): Json {
  const params: Json = {
    preferParams: preferParam([]),
    preferReturn: preferParam(["return=representation", "return=minimal", "return=none"]),
    preferCount: preferParam(["count=none"]),
    preferPost: preferParam([
      "return=representation",
      "return=minimal",
      "return=none",
      "resolution=ignore-duplicates",
      "resolution=merge-duplicates",
    ]),
    select: queryParam("select", "Filtering Columns"),
    on_conflict: queryParam("on_conflict", "On Conflict"),
    order: queryParam("order", "Ordering"),
    range: queryParam("Range", "Limiting and Pagination", true),
    rangeUnit: { ...queryParam("Range-Unit", "Limiting and Pagination", true), default: "items" },
    offset: queryParam("offset", "Limiting and Pagination"),
    limit: queryParam("limit", "Limiting and Pagination"),
  };
  for (const t of tables) {
    params[`body.${t.name}`] = {
      name: t.name,
      description: t.name,
      required: false,
      in: "body",
      schema: { $ref: `#/definitions/${t.name}` },
    };
    const extra = catalog.tables.get(t.name);
    for (const c of t.columns.values()) {
      params[`rowFilter.${t.name}.${c.name}`] = compact({
        name: c.name,
        description: extra?.columns.get(c.name)?.description ?? undefined,
        required: false,
        in: "query",
        type: "string",
      });
    }
  }
  return params;
}

function tablePath(table: TableInfo, catalog: OpenApiCatalog): Json {
  const [summary, description] = splitComment(catalog.tables.get(table.name)?.description ?? null);
  const op = compact({ tags: [table.name], summary, description });
  const filters = [...table.columns.keys()].map((c) => `rowFilter.${table.name}.${c}`);
  const item: Json = {
    get: {
      ...op,
      parameters: [...filters, "select", "order", "range", "rangeUnit", "offset", "limit", "preferCount"].map(
        ref,
      ),
      responses: {
        "200": {
          description: "OK",
          schema: { type: "array", items: { $ref: `#/definitions/${table.name}` } },
        },
        "206": { description: "Partial Content" },
      },
    },
  };
  if (table.insertable || table.updatable || table.deletable) {
    item.post = {
      ...op,
      parameters: [`body.${table.name}`, "select", "preferPost"].map(ref),
      responses: { "201": { description: "Created" } },
    };
    item.delete = {
      ...op,
      parameters: [...filters, "preferReturn"].map(ref),
      responses: { "204": { description: "No Content" } },
    };
    item.patch = {
      ...op,
      parameters: [...filters, `body.${table.name}`, "preferReturn"].map(ref),
      responses: { "204": { description: "No Content" } },
    };
  }
  return item;
}

/**
 * An argument's type as PostgREST names it (`regtype::text`, with the exposed schema on the search path): a type
 * of the schema described unqualified, whatever the search path of the session that read it.
 */
function argType(p: FunctionParam, schema: string): string {
  for (const prefix of [`${schema}.`, `"${schema.replaceAll('"', '""')}".`]) {
    if (p.type.startsWith(prefix)) return p.type.slice(prefix.length);
  }
  return p.type;
}

function procProperty(p: FunctionParam, schema: string): Json {
  const type = argType(p, schema);
  return compact({ format: swaggerFormat(type), type: swaggerType(type), items: arrayItems(type) });
}

function procGetParam(p: FunctionParam, schema: string): Json {
  const pType = argType(p, schema);
  if (p.variadic) {
    const element = pType.endsWith("[]") ? pType.slice(0, -2) : pType;
    return compact({
      name: p.name,
      required: p.required,
      in: "query",
      type: swaggerType(pType) ?? "string",
      items: compact({ type: swaggerType(element), format: swaggerFormat(element) }),
      collectionFormat: "multi",
    });
  }
  const type = swaggerType(pType);
  return {
    name: p.name,
    required: p.required,
    in: "query",
    format: swaggerFormat(pType),
    type: type === undefined || type === "array" ? "string" : type,
  };
}

function procPath(fn: FunctionInfo, description: string | null, schema: string): Json {
  const [summary, rest] = splitComment(description);
  const op = compact({
    summary,
    description: rest,
    tags: [`(rpc) ${fn.name}`],
    produces: PROC_MIMES,
  });
  const required = fn.params.filter((p) => p.required).map((p) => p.name);
  const post = {
    ...op,
    parameters: [
      {
        name: "args",
        required: true,
        in: "body",
        schema: compact({
          description: description ?? undefined,
          required: required.length > 0 ? required : undefined,
          properties: Object.fromEntries(fn.params.map((p) => [p.name, procProperty(p, schema)])),
          type: "object",
        }),
      },
      ref("preferParams"),
    ],
    responses: { "200": { description: "OK" } },
  };
  if (fn.volatility === "v") return { post };
  return {
    get: {
      ...op,
      parameters: fn.params.map((p) => procGetParam(p, schema)),
      responses: { "200": { description: "OK" } },
    },
    post,
  };
}

/** PostgREST's security definition (openapi-security-active): a JWT in `Authorization`. */
const SECURITY_DEFINITIONS = {
  JWT: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description: 'Add the token prepending "Bearer " (without quotes) to it',
  },
};

/**
 * The Swagger 2.0 document of `cache`'s schema as the role of `catalog` sees it; with `security`, PostgREST's
 * `securityDefinitions` and `security` (openapi-security-active).
 */
export function openApiDocument(
  cache: SchemaCache,
  catalog: OpenApiCatalog,
  server: OpenApiServer,
  options: { security?: boolean } = {},
): Json {
  const tables = [...cache.tables.values()].filter((t) => catalog.tables.has(t.name))
    .sort((a, b) => a.name.localeCompare(b.name));
  const functions = [...cache.functions.values()].map((overloads) => overloads[0]!)
    .filter((f) => catalog.functions.has(f.name)).sort((a, b) => a.name.localeCompare(b.name));
  const [title, description] = splitComment(catalog.description);
  const paths: Json = {
    "/": {
      get: {
        tags: ["Introspection"],
        summary: "OpenAPI description (this document)",
        produces: ["application/openapi+json", "application/json"],
        responses: { "200": { description: "OK" } },
      },
    },
  };
  for (const t of tables) paths[`/${t.name}`] = tablePath(t, catalog);
  for (const f of functions) {
    paths[`/rpc/${f.name}`] = procPath(f, catalog.functions.get(f.name)!.description, cache.schema);
  }
  return {
    swagger: "2.0",
    info: {
      description: description ??
        (catalog.description === null ? "This is a dynamic API generated by PostgREST" : ""),
      title: title ?? "PostgREST API",
      version: OPENAPI_POSTGREST_VERSION,
    },
    host: server.host,
    basePath: server.basePath,
    schemes: [server.scheme],
    consumes: MIMES,
    produces: MIMES,
    paths,
    definitions: Object.fromEntries(tables.map((t) => [t.name, tableDefinition(cache, t, catalog)])),
    parameters: parameterDefinitions(tables, catalog),
    ...(options.security ? { securityDefinitions: SECURITY_DEFINITIONS, security: [{ JWT: [] }] } : {}),
    externalDocs: {
      description: "PostgREST Documentation",
      url: `https://postgrest.org/en/${DOCS_VERSION}/references/api.html`,
    },
  };
}
