// Cases ported from PostgREST's own OpenAPI spec (test/spec/Feature/OpenApi/…, PostgREST v14), case by case:
// OpenApiSpec, SecurityOpenApiSpec, DisabledOpenApiSpec and IgnorePrivOpenApiSpec, on a fixture of the spec's
// own tables and functions (test/spec/fixtures/schema.sql and privileges.sql, the parts these cases read),
// created by the project owner. Most cases read parts of the document (a path's verbs, a definition's
// properties, the parameters): each configuration's document is fetched once and its parts compared with what
// the spec expects. The spec's schema is `test`; ours is `public`, so a type the spec names
// `test.enum_menagerie_type` is `public.enum_menagerie_type` here. Its roles map to ours: the anonymous
// `postgrest_test_anonymous` is `anon` (the public key, no JWT), `postgrest_test_author`'s JWT a signed-up
// user's (`authenticated`), which alone is granted `authors_only` and `privileged_hello`. The spec's
// `Content-Length` checks are kept as `bytes` (the body's length; the in-process handler sets no such header).
//
// Left out, with why:
// - RootSpec (2 cases: "accepts application/openapi+json", "accepts application/json"): they need
//   `db-root-spec` (a function answering `GET /` in place of the document); the platform has no such setting.
// - ProxySpec is not in this port's brief (`openapi-server-proxy-uri`, which the platform lacks: host and
//   basePath come from the request, see docs/data.md).
// - "root path returns a valid openapi spec" (OpenApiSpec and IgnorePrivOpenApiSpec) validates the document
//   against the Swagger 2.0 JSON schema (hspec-wai's validateOpenApiResponse); no validator is a dependency
//   of the platform, so the step checks what the schema checks most: `swagger` is "2.0", the required
//   top-level fields, every operation has responses, and every `$ref` resolves (this fixture's document, checked
//   once by hand with Python's openapi-spec-validator, had no error). Its HEAD half is as the spec.
// - "Foreign table: includes foreign table properties" runs on PostgreSQL only: its table needs file_fdw,
//   which PGlite does not load (see FOREIGN_TABLE_SQL).
import { assertEquals, assertNotEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { serverUrl, startPlatform, type TestPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const OPENAPI_TYPE = "application/openapi+json; charset=utf-8";

const SQL = `
comment on schema public is $$My API title

My API description
that spans
multiple lines$$;
create type enum_menagerie_type as enum ('foo', 'bar');
create table items (id bigserial primary key);
create table clients (id integer primary key, name text not null);
create table projects (id integer primary key, name text not null, client_id integer references clients (id));
alter table projects rename constraint projects_client_id_fkey to client;
create view projects_view as select projects.id, projects.name, projects.client_id from projects;
-- views named before and after projects (the fk of projects still points to the table)
create view alpha_projects as
  select c.id, p.name as pro_name, c.name as cli_name from projects p join clients c on p.client_id = c.id;
create view zeta_projects as
  select c.id, p.name as pro_name, c.name as cli_name from projects p join clients c on p.client_id = c.id;
create table users (id integer primary key, name text not null);
create table authors_only (owner character varying not null, secret character varying not null primary key);
revoke all on authors_only from anon;
grant all on authors_only to authenticated;
create table entities (id integer primary key, name text, arr integer[], text_search_vector tsvector);
create table child_entities (id integer primary key, name text, parent_id integer references entities (id));
create view child_entities_view as table child_entities;
create table grandchild_entities (
  id integer primary key, name text, parent_id integer references child_entities (id), or_starting_col text,
  and_starting_col text, jsonb_col jsonb
);
comment on table child_entities is 'child_entities comment';
comment on column child_entities.id is 'child_entities id comment';
comment on column child_entities.name is 'child_entities name comment. Can be longer than sixty-three characters long';
comment on view child_entities_view is 'child_entities_view comment';
comment on column child_entities_view.id is 'child_entities_view id comment';
comment on column child_entities_view.name is 'child_entities_view name comment. Can be longer than sixty-three characters long';
comment on table grandchild_entities is $$grandchild_entities summary

grandchild_entities description
that spans
multiple lines$$;
create table menagerie (
  "integer" integer primary key, double double precision not null, "varchar" character varying not null,
  "boolean" boolean not null, date date not null, money money not null, enum enum_menagerie_type not null
);
create table car_models (name varchar(64) not null, year int not null) partition by list (year);
comment on table car_models is $$A partitioned table

A test for partitioned tables$$;
create table car_models_2021 partition of car_models for values in (2021);
create table car_models_default partition of car_models for values in (1981, 1997, 2001, 2013);
create table car_brands (name varchar(64) primary key);
alter table car_models add primary key (name, year);
alter table car_models add column car_brand_name varchar(64) references car_brands (name);
create materialized view materialized_projects as select id, name, client_id from projects;
comment on materialized view materialized_projects is $$A materialized view for projects

Just a test for materialized views$$;
create schema private;
create table private.pages (link int not null unique, url text);
create table private.referrals (site text, link int references private.pages (link) not null);
insert into private.pages values (1, 'http://postgrest.org/en/v6.0/api.html'),
  (2, 'http://postgrest.org/en/v6.0/admin.html');
insert into private.referrals values ('github.com', 1), ('hub.docker.com', 2);
create view pages as select * from private.pages;
create view referrals as select * from private.referrals;
create table openapi_types (
  "a_character_varying" character varying, "a_character" character(1), "a_text" text, "a_boolean" boolean,
  "a_smallint" smallint, "a_integer" integer, "a_bigint" bigint, "a_numeric" numeric, "a_real" real,
  "a_double_precision" double precision, "a_json" json, "a_jsonb" jsonb, "a_text_arr" text[], "a_int_arr" int[],
  "a_bool_arr" boolean[], "a_char_arr" char[], "a_varchar_arr" varchar[], "a_bigint_arr" bigint[],
  "a_numeric_arr" numeric[], "a_json_arr" json[], "a_jsonb_arr" jsonb[]
);
create table openapi_defaults (
  "text" text default 'default', "boolean" boolean default false, "integer" integer default 42,
  "numeric" numeric default 42.2, "date" date default '1900-01-01'::date,
  "time" time default '13:00:00'::time without time zone
);
create table second (id int primary key, name text);
create table first (
  id int primary key, name text, second_id_1 int references second unique, second_id_2 int references second unique
);
create function varied_arguments_openapi(
  double double precision, "varchar" character varying, "boolean" boolean, date date, money money,
  enum enum_menagerie_type, text_arr text[], int_arr int[], bool_arr boolean[], char_arr char[],
  varchar_arr varchar[], bigint_arr bigint[], numeric_arr numeric[], json_arr json[], jsonb_arr jsonb[],
  "integer" integer default 42, "json" json default '{}', jsonb jsonb default '{}'
) returns json language sql immutable as $_$ select json_build_object('double', double) $_$;
comment on function varied_arguments_openapi(double precision, character varying, boolean, date, money,
  enum_menagerie_type, text[], int[], boolean[], char[], varchar[], bigint[], numeric[], json[], jsonb[], integer,
  json, jsonb) is $_$An RPC function

Just a test for RPC function arguments$_$;
create function privileged_hello(name text) returns text language sql as $$ select 'Privileged hello to ' || $1 $$;
revoke execute on function privileged_hello(text) from public, anon;
grant execute on function privileged_hello(text) to authenticated;
create function many_out_params(out my_json json, out num int, out str text) language sql as
  $$ select '{"a": 1, "b": "two"}'::json, 3, 'four'::text $$;
create function many_inout_params(inout num int, inout str text, inout b bool default true) language sql as
  $$ select num, str, b $$;
create function variadic_param(variadic v text[] default '{}') returns text[] immutable language sql as
  $$ select v $$;
create function reset_table(tbl_name text default '', tbl_data json default '[]') returns void
  language plpgsql volatile as $_$ begin
  execute format($$ delete from %I where true; insert into %I select * from json_populate_recordset(null::%I, $1) $$,
    tbl_name, tbl_name, tbl_name) using tbl_data;
end; $_$;
create function getallusers() returns setof users language sql stable as $$ select * from users $$;
-- the spec's jwt_test signs a token with pgjwt; only its volatility (immutable) matters here
create function jwt_test() returns text language sql security definer immutable as $$ select 'token'::text $$;
create schema v1;
grant usage on schema v1 to anon, authenticated, service_role;
create table v1.parents (id int primary key, name text);
create table v1.children (
  id int primary key, name text, parent_id int, constraint parent foreign key (parent_id) references v1.parents (id)
);
create function v1.get_parents_below(id int) returns setof v1.parents language sql as
  $$ select * from v1.parents where id < $1 $$;
grant all on all tables in schema v1 to anon, authenticated, service_role;
`;

// The spec's foreign table, through file_fdw, which only a superuser may install and point at a file: the
// platform's own session creates it (PostgreSQL only: PGlite has no file_fdw loaded, and a wrapper without a
// handler fails every introspection, PostgREST's too, as pg_relation_is_updatable asks the handler).
const FOREIGN_TABLE_SQL = `
create extension file_fdw;
create server import_csv foreign data wrapper file_fdw;
create foreign table public.projects_dump (id integer, name text, client_id integer)
  server import_csv options (filename '/tmp/projects_dump.csv', format 'csv');
comment on foreign table public.projects_dump is $$A temporary projects dump

Just a test for foreign tables$$;
grant all on public.projects_dump to anon, authenticated, service_role;
`;

/** A value the document does not have at that path. */
const ABSENT = Symbol("absent");
/** Any value: the document has that path (the spec's `shouldNotBe Nothing`). */
const PRESENT = Symbol("present");

type Key = string | number;

/** One spec case: paths into one configuration's document, and the value the spec expects at each. */
interface PartCase {
  name: string;
  /** Whose document: anonymous (default, the spec's `get "/"`) or the author's (a user JWT). */
  as?: "anon" | "author";
  /** Needs what only PostgreSQL has (file_fdw): run in the suite's PostgreSQL run only. */
  postgresOnly?: boolean;
  parts: [Key[], unknown][];
}

function pick(doc: unknown, path: Key[]): unknown {
  let at: unknown = doc;
  for (const key of path) {
    if (at === null || typeof at !== "object" || !(key in at)) return ABSENT;
    at = (at as Record<Key, unknown>)[key];
  }
  return at;
}

function checkParts(doc: unknown, c: PartCase): void {
  for (const [path, value] of c.parts) {
    const found = pick(doc, path);
    if (value === PRESENT) assertNotEquals(found, ABSENT, path.join(" . "));
    else assertEquals(found, value, path.join(" . "));
  }
}

const refs = (...names: string[]) => names.map((n) => ({ $ref: `#/parameters/${n}` }));
/** The GET parameters of a table: its row filters, then PostgREST's read parameters. */
const readParams = (table: string, ...columns: string[]) =>
  refs(
    ...columns.map((c) => `rowFilter.${table}.${c}`),
    "select",
    "order",
    "range",
    "rangeUnit",
    "offset",
    "limit",
    "preferCount",
  );
const types = (column: string): Key[] => ["definitions", "openapi_types", "properties", column];
const defaults = (
  column: string,
): Key[] => ["definitions", "openapi_defaults", "properties", column, "default"];
const arrayOf = (format: string, items: unknown) => ({ format, type: "array", items });
const fkNote = (table: string, column: string) =>
  `Note:\nThis is a Foreign Key to \`${table}.${column}\`.<fk table='${table}' column='${column}'/>`;

/** PostgREST's docsVersion of v14: its docs' URL. */
const DOCS_URL = "https://postgrest.org/en/v14/references/api.html";

// OpenApiSpec, on the spec's base configuration (follow-privileges, no security).
const OPENAPI_SPEC: PartCase[] = [
  // Its non-zero Content-Length: the document is read from a non-empty body (openApi parses it).
  {
    name: "includes postgrest.org current version api docs",
    parts: [[["externalDocs", "url"], DOCS_URL]],
  },
  {
    name: "schema: includes title and comments to schema",
    parts: [
      [["info", "title"], "My API title"],
      [["info", "description"], "My API description\nthat spans\nmultiple lines"],
    ],
  },
  {
    name: "table: includes paths to tables",
    parts: [
      [["paths", "/child_entities", "get", "summary"], "child_entities comment"],
      [["paths", "/child_entities", "get", "description"], ABSENT],
      [["paths", "/grandchild_entities", "get", "summary"], "grandchild_entities summary"],
      [
        ["paths", "/grandchild_entities", "get", "description"],
        "grandchild_entities description\nthat spans\nmultiple lines",
      ],
      [
        ["paths", "/child_entities", "get", "parameters"],
        readParams("child_entities", "id", "name", "parent_id"),
      ],
      [
        ["paths", "/child_entities", "post", "parameters"],
        refs("body.child_entities", "select", "preferPost"),
      ],
      [["paths", "/child_entities", "post", "responses", "201", "description"], "Created"],
      [["paths", "/child_entities", "patch", "responses", "204", "description"], "No Content"],
      [["paths", "/child_entities", "delete", "responses", "204", "description"], "No Content"],
    ],
  },
  {
    name: "table: includes an array type for GET responses",
    parts: [[["paths", "/child_entities", "get", "responses", "200", "schema"], {
      items: { $ref: "#/definitions/child_entities" },
      type: "array",
    }]],
  },
  {
    name: "table: includes definitions to tables",
    parts: [[["definitions", "child_entities"], {
      type: "object",
      description: "child_entities comment",
      properties: {
        id: {
          description: "child_entities id comment\n\nNote:\nThis is a Primary Key.<pk/>",
          format: "int32",
          type: "integer",
        },
        name: {
          description: "child_entities name comment. Can be longer than sixty-three characters long",
          format: "text",
          type: "string",
        },
        parent_id: { description: fkNote("entities", "id"), format: "int32", type: "integer" },
      },
      required: ["id"],
    }]],
  },
  {
    name: "table: includes definitions to views",
    parts: [[["definitions", "child_entities_view"], {
      type: "object",
      description: "child_entities_view comment",
      properties: {
        id: {
          description: "child_entities_view id comment\n\nNote:\nThis is a Primary Key.<pk/>",
          format: "int32",
          type: "integer",
        },
        name: {
          description: "child_entities_view name comment. Can be longer than sixty-three characters long",
          format: "text",
          type: "string",
        },
        parent_id: { description: fkNote("entities", "id"), format: "int32", type: "integer" },
      },
    }]],
  },
  {
    name: "table: doesn't include privileged table for anonymous",
    parts: [[["paths", "/authors_only"], ABSENT]],
  },
  {
    name: "table: includes table if user has permission",
    as: "author",
    parts: [[["paths", "/authors_only", "post", "tags", 0], "authors_only"]],
  },
  {
    name: "table: includes a fk description for a O2O relationship",
    parts: [[["definitions", "first", "properties", "second_id_1"], {
      format: "int32",
      type: "integer",
      description: fkNote("second", "id"),
    }]],
  },
  {
    name: "Foreign table: includes foreign table properties",
    postgresOnly: true,
    parts: [
      [["paths", "/projects_dump", "get", "summary"], "A temporary projects dump"],
      [["paths", "/projects_dump", "get", "description"], "Just a test for foreign tables"],
      [
        ["paths", "/projects_dump", "get", "parameters"],
        readParams("projects_dump", "id", "name", "client_id"),
      ],
    ],
  },
  {
    name: "Partitioned table: includes partitioned table properties",
    parts: [
      [["paths", "/car_models", "get", "summary"], "A partitioned table"],
      [["paths", "/car_models", "get", "description"], "A test for partitioned tables"],
      [["paths", "/car_models", "get", "parameters", 0, "$ref"], "#/parameters/rowFilter.car_models.name"],
      [["paths", "/car_models", "get", "parameters", 1, "$ref"], "#/parameters/rowFilter.car_models.year"],
      [
        ["paths", "/car_models", "get", "parameters", 2, "$ref"],
        "#/parameters/rowFilter.car_models.car_brand_name",
      ],
    ],
  },
  {
    name: "Materialized view: includes materialized view properties",
    parts: [
      [["paths", "/materialized_projects", "get", "summary"], "A materialized view for projects"],
      [["paths", "/materialized_projects", "get", "description"], "Just a test for materialized views"],
      [
        ["paths", "/materialized_projects", "get", "parameters"],
        readParams("materialized_projects", "id", "name", "client_id"),
      ],
    ],
  },
  {
    name: "VIEW that has a source FK based on a UNIQUE key: includes fk description",
    parts: [[["definitions", "referrals", "properties", "link"], {
      format: "int32",
      type: "integer",
      description: fkNote("pages", "link"),
    }]],
  },
  {
    name:
      "VIEW created for a TABLE with a O2M relationship: fk points to destination TABLE instead of the VIEW",
    parts: [[["definitions", "projects", "properties", "client_id"], {
      format: "int32",
      type: "integer",
      description: fkNote("clients", "id"),
    }]],
  },
  // PostgreSQL to Swagger Type Mapping
  {
    name: "character varying to string",
    parts: [[types("a_character_varying"), { format: "character varying", type: "string" }]],
  },
  {
    name: "character(1) to string",
    parts: [[types("a_character"), { maxLength: 1, format: "character", type: "string" }]],
  },
  { name: "text to string", parts: [[types("a_text"), { format: "text", type: "string" }]] },
  { name: "boolean to boolean", parts: [[types("a_boolean"), { format: "boolean", type: "boolean" }]] },
  { name: "smallint to integer", parts: [[types("a_smallint"), { format: "int32", type: "integer" }]] },
  { name: "integer to integer", parts: [[types("a_integer"), { format: "int32", type: "integer" }]] },
  { name: "bigint to integer", parts: [[types("a_bigint"), { format: "int64", type: "integer" }]] },
  { name: "numeric to number", parts: [[types("a_numeric"), { format: "numeric", type: "number" }]] },
  { name: "real to number", parts: [[types("a_real"), { format: "real", type: "number" }]] },
  {
    name: "double_precision to number",
    parts: [[types("a_double_precision"), { format: "double precision", type: "number" }]],
  },
  { name: "json to any", parts: [[types("a_json"), { format: "json" }]] },
  { name: "jsonb to any", parts: [[types("a_jsonb"), { format: "jsonb" }]] },
  {
    name: "array types to array",
    parts: [
      [types("a_text_arr"), arrayOf("text[]", { type: "string" })],
      [types("a_int_arr"), arrayOf("integer[]", { type: "integer" })],
      [types("a_bool_arr"), arrayOf("boolean[]", { type: "boolean" })],
      [types("a_char_arr"), arrayOf("character[]", { type: "string" })],
      [types("a_varchar_arr"), arrayOf("character varying[]", { type: "string" })],
      [types("a_bigint_arr"), arrayOf("bigint[]", { type: "integer" })],
      [types("a_numeric_arr"), arrayOf("numeric[]", { type: "number" })],
      [types("a_json_arr"), arrayOf("json[]", {})],
      [types("a_jsonb_arr"), arrayOf("jsonb[]", {})],
    ],
  },
  // Detects default values
  { name: "default: text", parts: [[defaults("text"), "default"]] },
  { name: "default: boolean", parts: [[defaults("boolean"), false]] },
  { name: "default: integer", parts: [[defaults("integer"), 42]] },
  { name: "default: numeric", parts: [[defaults("numeric"), 42.2]] },
  { name: "default: date", parts: [[defaults("date"), "1900-01-01"]] },
  { name: "default: time", parts: [[defaults("time"), "13:00:00"]] },
  {
    name: "default: enum",
    parts: [[["definitions", "menagerie", "properties", "enum"], {
      format: "public.enum_menagerie_type",
      type: "string",
      enum: ["foo", "bar"],
    }]],
  },
  // RPC
  {
    name:
      "RPC: includes function summary/description and query parameters for arguments in the get path item",
    parts: [
      [["paths", "/rpc/varied_arguments_openapi", "get", "summary"], "An RPC function"],
      [
        ["paths", "/rpc/varied_arguments_openapi", "get", "description"],
        "Just a test for RPC function arguments",
      ],
      [["paths", "/rpc/varied_arguments_openapi", "get", "parameters"], [
        ...[
          ["double precision", "double", "number"],
          ["character varying", "varchar", "string"],
          ["boolean", "boolean", "boolean"],
          ["date", "date", "string"],
          ["money", "money", "string"],
          ["enum_menagerie_type", "enum", "string"],
          ["text[]", "text_arr", "string"],
          ["integer[]", "int_arr", "string"],
          ["boolean[]", "bool_arr", "string"],
          ["character[]", "char_arr", "string"],
          ["character varying[]", "varchar_arr", "string"],
          ["bigint[]", "bigint_arr", "string"],
          ["numeric[]", "numeric_arr", "string"],
          ["json[]", "json_arr", "string"],
          ["jsonb[]", "jsonb_arr", "string"],
        ].map(([format, name, type]) => ({ format, in: "query", name, required: true, type })),
        ...[
          ["int32", "integer", "integer"],
          ["json", "json", "string"],
          ["jsonb", "jsonb", "string"],
        ].map(([format, name, type]) => ({ format, in: "query", name, required: false, type })),
      ]],
    ],
  },
  {
    name: "RPC: includes function summary/description and body schema for arguments in the post path item",
    parts: [
      [["paths", "/rpc/varied_arguments_openapi", "post", "summary"], "An RPC function"],
      [
        ["paths", "/rpc/varied_arguments_openapi", "post", "description"],
        "Just a test for RPC function arguments",
      ],
      [["paths", "/rpc/varied_arguments_openapi", "post", "parameters", 0, "schema"], {
        required: [
          "double",
          "varchar",
          "boolean",
          "date",
          "money",
          "enum",
          "text_arr",
          "int_arr",
          "bool_arr",
          "char_arr",
          "varchar_arr",
          "bigint_arr",
          "numeric_arr",
          "json_arr",
          "jsonb_arr",
        ],
        properties: {
          double: { format: "double precision", type: "number" },
          varchar: { format: "character varying", type: "string" },
          boolean: { format: "boolean", type: "boolean" },
          date: { format: "date", type: "string" },
          money: { format: "money", type: "string" },
          enum: { format: "enum_menagerie_type", type: "string" },
          text_arr: arrayOf("text[]", { type: "string" }),
          int_arr: arrayOf("integer[]", { type: "integer" }),
          bool_arr: arrayOf("boolean[]", { type: "boolean" }),
          char_arr: arrayOf("character[]", { type: "string" }),
          varchar_arr: arrayOf("character varying[]", { type: "string" }),
          bigint_arr: arrayOf("bigint[]", { type: "integer" }),
          numeric_arr: arrayOf("numeric[]", { type: "number" }),
          json_arr: arrayOf("json[]", {}),
          jsonb_arr: arrayOf("jsonb[]", {}),
          integer: { format: "int32", type: "integer" },
          json: { format: "json" },
          jsonb: { format: "jsonb" },
        },
        type: "object",
        description: "An RPC function\n\nJust a test for RPC function arguments",
      }],
    ],
  },
  {
    name: "RPC: doesn't include privileged function for anonymous",
    parts: [[["paths", "/rpc/privileged_hello"], ABSENT]],
  },
  {
    name: "RPC: includes function if user has permission",
    as: "author",
    parts: [[["paths", "/rpc/privileged_hello", "post", "tags", 0], "(rpc) privileged_hello"]],
  },
  {
    name: "RPC: doesn't include OUT params of function as required parameters",
    parts: [[["paths", "/rpc/many_out_params", "post", "parameters", 0, "schema", "required"], ABSENT]],
  },
  {
    name: "RPC: includes INOUT params(with no DEFAULT) of function as required parameters",
    parts: [[["paths", "/rpc/many_inout_params", "post", "parameters", 0, "schema", "required"], [
      "num",
      "str",
    ]]],
  },
  {
    name: "RPC: uses a multi collection format when the function has a VARIADIC parameter",
    parts: [[["paths", "/rpc/variadic_param", "get", "parameters", 0], {
      collectionFormat: "multi",
      in: "query",
      items: { format: "text", type: "string" },
      name: "v",
      required: false,
      type: "array",
    }]],
  },
  {
    name: "RPC: only includes POST method for volatile functions",
    parts: [[["paths", "/rpc/reset_table", "get"], ABSENT], [["paths", "/rpc/reset_table", "post"], PRESENT]],
  },
  {
    name: "RPC: includes GET and POST methods for stable functions",
    parts: [[["paths", "/rpc/getallusers", "get"], PRESENT], [
      ["paths", "/rpc/getallusers", "post"],
      PRESENT,
    ]],
  },
  {
    name: "RPC: includes GET and POST methods for immutable functions",
    parts: [[["paths", "/rpc/jwt_test", "get"], PRESENT], [["paths", "/rpc/jwt_test", "post"], PRESENT]],
  },
  {
    name: "RPC: does not include empty enum in the preferParams parameter",
    parts: [[["parameters", "preferParams", "enum"], ABSENT]],
  },
  {
    name: "Security: does not include security or security definitions by default",
    parts: [[["security"], ABSENT], [["securityDefinitions"], ABSENT]],
  },
];

// OpenApiSpec's cases that are a request and its answer.
const OPENAPI_WIRE: WireCase[] = [
  {
    name: "root path returns a valid openapi spec (HEAD)",
    method: "HEAD",
    url: "",
    anon: true,
    headers: { accept: "application/openapi+json" },
    status: 200,
    text: "",
    expect: { "content-type": OPENAPI_TYPE, "content-length": null },
  },
  {
    name: "should respond to openapi request on none root path with 406",
    url: "items",
    anon: true,
    headers: { accept: "application/openapi+json" },
    status: 406,
  },
  {
    name: "should respond to openapi request with unsupported media type with 406",
    url: "",
    anon: true,
    headers: { accept: "text/csv" },
    status: 406,
  },
];

// The relationship the fk description above shows, embedded: QuerySpec's case of the same views (the relations
// of a view's tables in another schema, which the schema cache reads for both).
const SOURCE_FK_EMBED: WireCase = {
  name: "QuerySpec: VIEW that has a source FK based on a UNIQUE key: can be embedded",
  url: "referrals?select=site,link:pages(url)",
  anon: true,
  status: 200,
  json: [
    { site: "github.com", link: { url: "http://postgrest.org/en/v6.0/api.html" } },
    { site: "hub.docker.com", link: { url: "http://postgrest.org/en/v6.0/admin.html" } },
  ],
  expect: { "content-type": "application/json; charset=utf-8" },
};

// SecurityOpenApiSpec (openapi-security-active = true).
const SECURITY_SPEC: PartCase[] = [
  {
    name: "Security active: includes security and security definitions",
    parts: [
      [["security"], [{ JWT: [] }]],
      [["securityDefinitions"], {
        JWT: {
          description: 'Add the token prepending "Bearer " (without quotes) to it',
          in: "header",
          name: "Authorization",
          type: "apiKey",
        },
      }],
    ],
  },
];

// DisabledOpenApiSpec (openapi-mode = disabled).
const DISABLED_SPEC: WireCase[] = [
  {
    name: "Disabled OpenApi: responds with 404",
    url: "",
    anon: true,
    headers: { accept: "application/openapi+json" },
    status: 404,
    json: err("PGRST126", "Root endpoint metadata is disabled"),
    bytes: 93,
  },
];

// IgnorePrivOpenApiSpec (openapi-mode = ignore-privileges, db-schemas = test, v1), on the default schema.
const IGNORE_PRIV_SPEC: PartCase[] = [
  {
    name: "table: includes privileged table even if user does not have permission",
    parts: [[["paths", "/authors_only", "post", "tags", 0], "authors_only"]],
  },
  {
    name: "table: includes comments on tables",
    parts: [
      [["paths", "/grandchild_entities", "get", "summary"], "grandchild_entities summary"],
      [
        ["paths", "/grandchild_entities", "get", "description"],
        "grandchild_entities description\nthat spans\nmultiple lines",
      ],
    ],
  },
  {
    name: "RPC: includes privileged function even if user does not have permission",
    parts: [[["paths", "/rpc/privileged_hello", "post", "tags", 0], "(rpc) privileged_hello"]],
  },
];

// IgnorePrivOpenApiSpec's cases that compare the default schema's document with v1's (Accept-Profile: v1).
const IGNORE_PRIV_PROFILE_SPEC: { name: string; path: Key[] }[] = [
  {
    name: "table: only includes tables that belong to another schema if the Accept-Profile header is used",
    path: ["paths", "/children"],
  },
  {
    name: "RPC: only includes functions that belong to another schema if the Accept-Profile header is used",
    path: ["paths", "/rpc/get_parents_below"],
  },
];

/** The document `GET /rest/v1/` answers, as anon (the public key alone) or with a user's JWT. */
async function openApi(
  p: TestPlatform,
  headers: Record<string, string> = {},
  token?: string,
): Promise<unknown> {
  const res = await p.fetch("/rest/v1/", {
    headers: { apikey: p.publicKey, ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
  const text = await res.text();
  assertEquals(res.status, 200, text);
  assertEquals(res.headers.get("content-type"), OPENAPI_TYPE);
  return JSON.parse(text);
}

/**
 * What validateOpenApiResponse checks most, without a Swagger 2.0 validator: the version, the required
 * top-level fields, responses on every operation, and every `$ref` resolving in the document.
 */
function checkSwagger(doc: Record<string, unknown>): void {
  assertEquals(doc.swagger, "2.0");
  for (const field of ["info", "paths"]) assertEquals(typeof doc[field], "object", field);
  const info = doc.info as Record<string, unknown>;
  assertEquals([typeof info.title, typeof info.version], ["string", "string"]);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    assertEquals(path.startsWith("/"), true, path);
    for (const [verb, op] of Object.entries(item)) {
      assertEquals(["get", "post", "patch", "delete"].includes(verb), true, `${path} ${verb}`);
      assertEquals(typeof (op as Record<string, unknown>).responses, "object", `${path} ${verb}`);
    }
  }
  for (const [, kind, name] of JSON.stringify(doc).matchAll(/"\$ref":"#\/(\w+)\/([^"]+)"/g)) {
    assertEquals(name! in (doc[kind!] as Record<string, unknown>), true, `#/${kind}/${name}`);
  }
}

/** A signed-up user's access token: PostgREST's author JWT (`authenticated` here). */
async function authorToken(p: TestPlatform): Promise<string> {
  const res = await p.fetch("/v1/auth/signup", {
    method: "POST",
    headers: { apikey: p.publicKey },
    json: { email: "author@example.com", password: "correct-horse-1" },
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return body.data.session.access_token;
}

async function patchSettings(p: TestPlatform, settings: Record<string, unknown>): Promise<void> {
  const res = await p.fetch("/v1/project/data-settings", {
    method: "PATCH",
    headers: { apikey: p.secretKey },
    json: settings,
  });
  assertEquals(res.status, 200, await res.text());
}

Deno.test("PostgREST's OpenApi specs on /rest/v1", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    if (serverUrl) await p.internalSql(FOREIGN_TABLE_SQL);
    await t.step("OpenApiSpec", async (t) => {
      const anon = await openApi(p);
      const author = await openApi(p, {}, await authorToken(p));
      await t.step(
        "root path returns a valid openapi spec",
        () => checkSwagger(anon as Record<string, unknown>),
      );
      for (const c of OPENAPI_WIRE) await t.step(c.name, () => runWireCase(p, c));
      await t.step(SOURCE_FK_EMBED.name, () => runWireCase(p, SOURCE_FK_EMBED));
      // The cases that need what only PostgreSQL has (file_fdw) run in the PostgreSQL run of the suite.
      for (const c of OPENAPI_SPEC.filter((c) => serverUrl || c.postgresOnly !== true)) {
        await t.step(c.name, () => checkParts(c.as === "author" ? author : anon, c));
      }
    });
    await t.step("SecurityOpenApiSpec", async (t) => {
      await patchSettings(p, { openapi_security_active: true });
      const doc = await openApi(p);
      for (const c of SECURITY_SPEC) await t.step(c.name, () => checkParts(doc, c));
      await patchSettings(p, { openapi_security_active: null });
    });
    await t.step("DisabledOpenApiSpec", async (t) => {
      await patchSettings(p, { openapi_mode: "disabled" });
      for (const c of DISABLED_SPEC) await t.step(c.name, () => runWireCase(p, c));
      await patchSettings(p, { openapi_mode: null });
    });
    await t.step("IgnorePrivOpenApiSpec", async (t) => {
      await patchSettings(p, { openapi_mode: "ignore-privileges", schemas: ["public", "v1"] });
      const doc = await openApi(p);
      const v1 = await openApi(p, { "accept-profile": "v1" });
      await t.step("root path returns a valid openapi spec", async () => {
        checkSwagger(doc as Record<string, unknown>);
        await runWireCase(p, OPENAPI_WIRE[0]!);
      });
      for (const c of IGNORE_PRIV_SPEC) await t.step(c.name, () => checkParts(doc, c));
      for (const c of IGNORE_PRIV_PROFILE_SPEC) {
        await t.step(c.name, () => {
          assertEquals(pick(doc, c.path), ABSENT);
          assertNotEquals(pick(v1, c.path), ABSENT);
        });
      }
    });
  } finally {
    await p.close();
  }
});
