// Cases ported from PostgREST's own spec suite (test/spec/Feature/…, PostgREST v14), row by row, as in
// tests/data_postgrest_spec_test.ts: the spec files about what surrounds a request — exposed schemas, the
// pre-request function and the headers it sets, Server-Timing, `Prefer: tx=` and JWT
// authorization. The fixture holds the parts of test/spec/fixtures/schema.sql and data.sql these cases read; the
// spec's schema `test` is our `public`. The spec's settings are the project's data settings here
// (`schemas` → DATA_SCHEMAS, `db-pre-request` → `pre_request`, `server-timing-enabled` → `server_timing`,
// `db-plan-enabled` → `plan`). Two `Prefer` headers the spec sends apart are sent as one list (the same
// preferences, RFC 9110 §5.3).
//
// Roles: the spec's `postgrest_test_author` is `authenticated` here (a user JWT signed with the project's key,
// the spec's claims added to those the platform requires: `sub`, `aud`, `exp`, `iat`, `ref`, `session_id`),
// `postgrest_test_anonymous` is `anon` (the public key, no JWT), and `postgrest_test_default_role` is `anon`.
// The spec's roles own their own grants; the fixture revokes from `anon`/`authenticated` what the spec's roles
// lack.
//
// Left out, with why:
// - RollbackSpec, its server's default (`db-tx-end = rollback-allow-override`): "without Prefer tx" does not
//   persist mutations (4 cases). The platform has no `db-tx-end` setting: a request without `Prefer: tx=`
//   commits (its "disallowed, without Prefer tx" cases, which persist, are ported instead).
// - RollbackSpec, `tx-allow-override = false` with `Prefer: tx=commit|rollback` (disallowed: 20 cases; forced,
//   `tx-rollback-all = true`: 30 cases). The platform always honours `Prefer: tx=` (docs/data.md, "What differs
//   from PostgREST"); there is no setting to turn it off or to roll back every request, so those answers are
//   the "allowed" ones already ported.
// - AuthSpec "returns jwt functions as jwt tokens" and "sql functions can encode custom and standard claims":
//   their answers are tokens signed in SQL by the pgjwt extension (`jwt.sign`) with the spec's HS256 secret;
//   neither the extension nor that secret exists here (the platform signs ES256 tokens with per-project keys).
// - AuthSpec's JWTs themselves: each is re-signed with the project's key (the spec's HS256 secret is not a key
//   the platform accepts), with the spec's claims; the expected status, body and `WWW-Authenticate` are the
//   spec's.
import { SignJWT } from "jose";
import { assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const JSON_TYPE = "application/json; charset=utf-8";
const SPECIAL = 'SPECIAL "@/\\#~_-';

/** test/spec/Feature/Query/MultipleSchemaSpec.hs's fixture: schemas v1, v2 and `SPECIAL "@/\#~_-`. */
const SCHEMAS_SQL = `
create domain "text/plain" as text;
create schema v1;
create schema v2;
create schema "SPECIAL ""@/\\#~_-";
grant usage on schema v1, v2, "SPECIAL ""@/\\#~_-" to anon, authenticated, service_role;
create table v1.parents (id int primary key, name text);
create table v1.children (
  id int primary key, name text, parent_id int, constraint parent foreign key (parent_id) references v1.parents (id)
);
create function v1.get_parents_below(id int) returns setof v1.parents language sql as
  $$ select * from v1.parents where id < $1 $$;
create table v2.parents (id int primary key, name text);
create table v2.children (
  id int primary key, name text, parent_id int, constraint parent foreign key (parent_id) references v2.parents (id)
);
create table v2.another_table (id int primary key, another_value text);
create function v2.get_parents_below(id int) returns setof v2.parents language sql as
  $$ select * from v2.parents where id < $1 $$;
create function v2.get_plain_text() returns public."text/plain" language sql as
  $$ select 'plain'::public."text/plain" $$;
create domain v2."text/special" as text;
create function v2.get_special_text() returns v2."text/special" language sql as
  $$ select 'special'::v2."text/special" $$;
create function v2.special_trans(state v2."text/special", next v2.another_table) returns v2."text/special"
  language sql as $$ select 'special'::v2."text/special" $$;
create aggregate v2.special_agg (v2.another_table) (initcond = '', stype = v2."text/special", sfunc = v2.special_trans);
create function v2.plain_trans(state public."text/plain", next v2.another_table) returns public."text/plain"
  language sql as $$ select 'plain'::public."text/plain" $$;
create aggregate v2.plain_agg (v2.another_table) (initcond = '', stype = public."text/plain", sfunc = v2.plain_trans);
create table "SPECIAL ""@/\\#~_-".languages (id int primary key, name text);
create table "SPECIAL ""@/\\#~_-".names (
  id int primary key, name text, language_id int references "SPECIAL ""@/\\#~_-".languages (id)
);
create function "SPECIAL ""@/\\#~_-".computed_languages("SPECIAL ""@/\\#~_-".names)
  returns setof "SPECIAL ""@/\\#~_-".languages rows 1 language sql as
  $$ select * from "SPECIAL ""@/\\#~_-".languages where id = $1.language_id $$;
grant all on all tables in schema v1, v2, "SPECIAL ""@/\\#~_-" to anon, authenticated, service_role;
grant execute on all functions in schema v1, v2, "SPECIAL ""@/\\#~_-" to anon, authenticated, service_role;
insert into v1.parents values (1, 'parent v1-1'), (2, 'parent v1-2');
insert into v1.children values (1, 'child v1-1', 1), (2, 'child v1-2', 2);
insert into v2.parents values (3, 'parent v2-3'), (4, 'parent v2-4');
insert into v2.children values (1, 'child v2-3', 3);
insert into v2.another_table values (5, 'value 5'), (6, 'value 6');
insert into "SPECIAL ""@/\\#~_-".languages (id, name) values (1, 'English'), (2, 'Spanish');
insert into "SPECIAL ""@/\\#~_-".names (id, name, language_id) values (1, 'John', 1), (2, 'Mary', 1), (3, 'José', 2);
`;

const UNKNOWN_SCHEMA = err(
  "PGRST106",
  "Invalid schema: unknown",
  null,
  `Only the following schemas are exposed: v1, v2, ${SPECIAL}`,
);

/**
 * test/spec/Feature/Query/MultipleSchemaSpec.hs (db-schemas = v1, v2, `SPECIAL "@/\#~_-`). Its writes are rolled
 * back here (`Prefer: tx=rollback`), as PostgREST's spec server rolls back every case.
 */
const MULTIPLE_SCHEMA_SPEC: WireCase[] = [
  {
    name: "succeeds in reading table from default schema v1 if no schema is selected via header",
    url: "parents",
    status: 200,
    json: [{ id: 1, name: "parent v1-1" }, { id: 2, name: "parent v1-2" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v1" },
  },
  {
    name: "succeeds in reading table from default schema v1 after explicitly passing it in the header",
    url: "parents",
    headers: { "accept-profile": "v1" },
    status: 200,
    json: [{ id: 1, name: "parent v1-1" }, { id: 2, name: "parent v1-2" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v1" },
  },
  {
    name: "succeeds in reading table from schema v2",
    url: "parents",
    headers: { "accept-profile": "v2" },
    status: 200,
    json: [{ id: 3, name: "parent v2-3" }, { id: 4, name: "parent v2-4" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "succeeds in reading another_table from schema v2",
    url: "another_table",
    headers: { "accept-profile": "v2" },
    status: 200,
    json: [{ id: 5, another_value: "value 5" }, { id: 6, another_value: "value 6" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "doesn't find another_table in schema v1",
    url: "another_table",
    headers: { "accept-profile": "v1" },
    status: 404,
    json: err("PGRST205", "Could not find the table 'v1.another_table' in the schema cache"),
  },
  {
    name: "fails trying to read table from unknown schema",
    url: "parents",
    headers: { "accept-profile": "unknown" },
    status: 406,
    json: UNKNOWN_SCHEMA,
  },
  {
    name: "succeeds in reading a table from a schema with uppercase and special characters in its name",
    url: "names?select=id,name",
    headers: { "accept-profile": SPECIAL },
    status: 200,
    json: [{ id: 1, name: "John" }, { id: 2, name: "Mary" }, { id: 3, name: "José" }],
    expect: { "content-type": JSON_TYPE, "content-profile": SPECIAL },
  },
  {
    name: "succeeds in embedding with FK when the schema name has special characters",
    url: "names?select=name,languages(name)&id=in.(1,3)",
    headers: { "accept-profile": SPECIAL },
    status: 200,
    json: [{ name: "John", languages: { name: "English" } }, {
      name: "José",
      languages: { name: "Spanish" },
    }],
    expect: { "content-type": JSON_TYPE, "content-profile": SPECIAL },
  },
  {
    name: "succeeds in embedding with computed relationships when the schema name has special characters",
    url: "names?select=name,computed_languages(name)&id=in.(1,3)",
    headers: { "accept-profile": SPECIAL },
    status: 200,
    json: [
      { name: "John", computed_languages: { name: "English" } },
      { name: "José", computed_languages: { name: "Spanish" } },
    ],
    expect: { "content-type": JSON_TYPE, "content-profile": SPECIAL },
  },
  {
    name: "succeeds inserting on default schema and returning it",
    method: "POST",
    url: "children",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"id": 0, "name": "child v1-1", "parent_id": 1}',
    status: 201,
    json: [{ id: 0, name: "child v1-1", parent_id: 1 }],
    expect: { "content-profile": "v1" },
  },
  {
    name: "succeeds inserting on the v1 schema and returning its parent",
    method: "POST",
    url: "children?select=id,parent(*)",
    headers: { prefer: "return=representation, tx=rollback", "content-profile": "v1" },
    body: '{"id": 0, "name": "child v1-2", "parent_id": 2}',
    status: 201,
    json: [{ id: 0, parent: { id: 2, name: "parent v1-2" } }],
    expect: { "content-profile": "v1" },
  },
  {
    name: "succeeds inserting on the v2 schema and returning its parent",
    method: "POST",
    url: "children?select=id,parent(*)",
    headers: { prefer: "return=representation, tx=rollback", "content-profile": "v2" },
    body: '{"id": 0, "name": "child v2-3", "parent_id": 3}',
    status: 201,
    json: [{ id: 0, parent: { id: 3, name: "parent v2-3" } }],
    expect: { "content-profile": "v2" },
  },
  {
    name: "fails when inserting on an unknown schema",
    method: "POST",
    url: "children",
    headers: { "content-profile": "unknown" },
    body: '{"name": "child 4", "parent_id": 4}',
    status: 406,
    json: UNKNOWN_SCHEMA,
  },
  {
    name: "succeeds in calling handler with a domain on another schema (table)",
    url: "another_table",
    headers: { "accept-profile": "v2", accept: "text/plain" },
    status: 200,
    text: "plain",
    expect: { "content-type": "text/plain; charset=utf-8", "content-profile": "v2" },
  },
  {
    name: "succeeds in calling handler with a domain on an exposed schema (table)",
    url: "another_table",
    headers: { "accept-profile": "v2", accept: "text/special" },
    status: 200,
    text: "special",
    expect: { "content-type": "text/special", "content-profile": "v2" },
  },
  {
    name: "succeeds in calling the default schema proc",
    url: "rpc/get_parents_below?id=6",
    status: 200,
    json: [{ id: 1, name: "parent v1-1" }, { id: 2, name: "parent v1-2" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v1" },
  },
  {
    name: "succeeds in calling the v1 schema proc and embedding",
    url: "rpc/get_parents_below?id=6&select=id,name,children(id,name)",
    headers: { "accept-profile": "v1" },
    status: 200,
    json: [
      { id: 1, name: "parent v1-1", children: [{ id: 1, name: "child v1-1" }] },
      { id: 2, name: "parent v1-2", children: [{ id: 2, name: "child v1-2" }] },
    ],
    expect: { "content-type": JSON_TYPE, "content-profile": "v1" },
  },
  {
    name: "succeeds in calling the v2 schema proc and embedding",
    url: "rpc/get_parents_below?id=6&select=id,name,children(id,name)",
    headers: { "accept-profile": "v2" },
    status: 200,
    json: [
      { id: 3, name: "parent v2-3", children: [{ id: 1, name: "child v2-3" }] },
      { id: 4, name: "parent v2-4", children: [] },
    ],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "succeeds in calling the v2 schema proc with POST by using Content-Profile",
    method: "POST",
    url: "rpc/get_parents_below?select=id,name",
    headers: { "content-profile": "v2" },
    body: '{"id": "6"}',
    status: 200,
    json: [{ id: 3, name: "parent v2-3" }, { id: 4, name: "parent v2-4" }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "succeeds in calling handler with a domain on another schema (function)",
    url: "rpc/get_plain_text",
    headers: { "accept-profile": "v2", accept: "text/plain" },
    status: 200,
    text: "plain",
    expect: { "content-type": "text/plain; charset=utf-8", "content-profile": "v2" },
  },
  {
    name: "succeeds in calling handler with a domain on an exposed schema (function)",
    url: "rpc/get_special_text",
    headers: { "accept-profile": "v2", accept: "text/special" },
    status: 200,
    text: "special",
    expect: { "content-type": "text/special", "content-profile": "v2" },
  },
  {
    name: "succeeds in patching on the v1 schema and returning its parent",
    method: "PATCH",
    url: "children?select=name,parent(name)&id=eq.1",
    headers: { "content-profile": "v1", prefer: "return=representation, tx=rollback" },
    body: '{"name": "child v1-1 updated"}',
    status: 200,
    json: [{ name: "child v1-1 updated", parent: { name: "parent v1-1" } }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v1" },
  },
  {
    name: "succeeds in patching on the v2 schema and returning its parent",
    method: "PATCH",
    url: "children?select=name,parent(name)&id=eq.1",
    headers: { "content-profile": "v2", prefer: "return=representation, tx=rollback" },
    body: '{"name": "child v2-1 updated"}',
    status: 200,
    json: [{ name: "child v2-1 updated", parent: { name: "parent v2-3" } }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "succeeds on deleting on the v2 schema",
    method: "DELETE",
    url: "children?id=eq.1",
    headers: { "content-profile": "v2", prefer: "return=representation, tx=rollback" },
    status: 200,
    json: [{ id: 1, name: "child v2-3", parent_id: 3 }],
    expect: { "content-profile": "v2" },
  },
  {
    name: "succeeds on PUT on the v2 schema",
    method: "PUT",
    url: "children?id=eq.111",
    headers: { "content-profile": "v2", prefer: "return=representation, tx=rollback" },
    body: '[{"id": 111, "name": "child v2-111", "parent_id": null}]',
    status: 201,
    json: [{ id: 111, name: "child v2-111", parent_id: null }],
    expect: { "content-type": JSON_TYPE, "content-profile": "v2" },
  },
  {
    name: "OpenAPI: fails trying to read definitions from unknown schema",
    url: "",
    headers: { "accept-profile": "unknown" },
    status: 406,
    json: UNKNOWN_SCHEMA,
  },
];

/** The OpenAPI definition of a table of two columns, `id` its primary key, as the spec expects it. */
const definition = (other: string) => ({
  type: "object",
  properties: {
    id: { description: "Note:\nThis is a Primary Key.<pk/>", format: "int32", type: "integer" },
    [other]: { format: "text", type: "string" },
  },
  required: ["id"],
});

/** MultipleSchemaSpec's "OpenAPI output": one definition of the document, or its absence. */
const OPENAPI_SPEC: { name: string; profile?: string; schema: string; table: string; def: unknown }[] = [
  {
    name: "succeeds in reading table definition from default schema v1 if no schema is selected via header",
    schema: "v1",
    table: "parents",
    def: definition("name"),
  },
  {
    name:
      "succeeds in reading table definition from default schema v1 after explicitly passing it in the header",
    profile: "v1",
    schema: "v1",
    table: "parents",
    def: definition("name"),
  },
  {
    name: "succeeds in reading table definition from schema v2",
    profile: "v2",
    schema: "v2",
    table: "parents",
    def: definition("name"),
  },
  {
    name: "succeeds in reading another_table definition from schema v2",
    profile: "v2",
    schema: "v2",
    table: "another_table",
    def: definition("another_value"),
  },
  {
    name: "doesn't find another_table definition in schema v1",
    profile: "v1",
    schema: "v1",
    table: "another_table",
    def: undefined,
  },
];

/** The fixture of the other spec files (schema `test` → `public`). */
const SQL = `
create table items (id bigserial primary key);
insert into items select generate_series(1, 15);
create function search(id bigint) returns setof items language plpgsql stable as
  $$ begin return query select * from items where items.id = search.id; end $$;
create table clients (id integer primary key, name text not null);
insert into clients values (1, 'Microsoft'), (2, 'Apple');
create table projects (id integer primary key, name text not null, client_id integer references clients (id));
insert into projects values (1, 'Windows 7', 1), (2, 'Windows 10', 1), (3, 'IOS', 2), (4, 'OSX', 2), (5, 'Orphan', null);
create function getallprojects() returns setof projects language sql as $$ select * from projects $$ rows 2019;
create table no_pk (a varchar, b varchar);
insert into no_pk values (null, null), ('1', '0'), ('2', '0');
create table tiobe_pls (name text primary key, rank smallint);
insert into tiobe_pls values ('Java', 1), ('C', 2), ('Python', 4);
create table organizations (
  id integer primary key, name text, referee integer references organizations (id),
  auditor integer references organizations (id), manager_id integer
);
insert into organizations values (1, 'Referee Org', null, null, 1), (2, 'Auditor Org', null, null, 2),
  (3, 'Acme', 1, 2, 3), (4, 'Umbrella', 1, 2, 4), (5, 'Cyberdyne', 3, 4, 5), (6, 'Oscorp', 3, 4, 6);
create type point_2d as (x integer, y integer);
create function ret_point_overloaded(x int, y int) returns point_2d language sql as $$ select row(x, y)::point_2d $$;
create function ret_point_overloaded(x json) returns json language sql as $$ select $1 $$;
create table deferrable_unique_constraint (col int unique deferrable initially immediate);
create function raise_constraint(deferred bool default false) returns void language plpgsql as $$ begin
  if deferred then set constraints all deferred; end if;
  insert into deferrable_unique_constraint values (1), (1);
end $$;
create function custom_headers() returns void language plpgsql as $$
declare
  user_agent text := current_setting('request.headers', true)::json->>'user-agent';
  req_path   text := current_setting('request.path', true);
  req_accept text := current_setting('request.headers', true)::json->>'accept';
  req_method text := current_setting('request.method', true);
begin
  if user_agent similar to 'MSIE (6.0|7.0)' then
    perform set_config('response.headers', '[{"Cache-Control": "no-cache, no-store, must-revalidate"}]', true);
  elsif req_path similar to '/(items|projects)' and req_accept = 'text/csv' then
    perform set_config('response.headers',
      format('[{"Content-Disposition": "attachment; filename=%s.csv"}]', trim('/' from req_path)), true);
  elsif req_path similar to '/(clients|rpc/getallprojects)' then
    perform set_config('response.headers', '[{"Content-Type": "application/custom+json"}]', true);
  elsif req_path = '/items' and req_method similar to 'POST|PATCH|PUT|DELETE' then
    perform set_config('response.headers', '[{"X-Custom-Header": "mykey=myval"}]', true);
  end if;
end $$;
create function custom_vary_hdr() returns void language plpgsql as $$ begin
  perform set_config('response.headers', '[{"Vary": "X-Test-Accept"}]', false);
end $$;
create table authors_only (owner varchar not null, secret varchar not null);
revoke all on authors_only from anon;
create table private_table ();
revoke all on private_table from anon, authenticated;
create function privileged_hello(name text) returns text language sql as $$ select 'Privileged hello to ' || $1 $$;
revoke execute on function privileged_hello(text) from public, anon;
grant execute on function privileged_hello(text) to authenticated;
create function reveal_big_jwt() returns table (
  iss text, sub text, exp bigint, nbf bigint, iat bigint, jti text, "http://postgrest.com/foo" boolean
) language sql security definer stable as $$
  select current_setting('request.jwt.claims')::json->>'iss' as iss,
         current_setting('request.jwt.claims')::json->>'sub' as sub,
         (current_setting('request.jwt.claims')::json->>'exp')::bigint as exp,
         (current_setting('request.jwt.claims')::json->>'nbf')::bigint as nbf,
         (current_setting('request.jwt.claims')::json->>'iat')::bigint as iat,
         current_setting('request.jwt.claims')::json->>'jti' as jti,
         (current_setting('request.jwt.claims')::json->>'http://postgrest.com/foo')::boolean as "http://postgrest.com/foo"
$$;
create function problem() returns void language plpgsql as $$ begin raise 'bad thing'; end $$;
create function get_current_user() returns text language sql stable as $$ select current_user::text $$;
-- The spec's switch_role, its roles ours: postgrest_test_author is authenticated, the default role anon.
create function switch_role() returns void language plpgsql as $$
declare
  user_id text;
begin
  user_id = (current_setting('request.jwt.claims')::json->>'id')::text;
  if user_id = '1'::text then
    execute 'set local role authenticated';
  elseif user_id = '2'::text then
    execute 'set local role anon';
  elseif user_id = '3'::text then
    raise exception 'Disabled ID --> %', user_id using hint = 'Please contact administrator';
  end if;
end $$;
`;

/** The rows of one spec case that sends several requests in turn. */
type Sequence = { name: string; steps: WireCase[] };

const one = (c: WireCase): Sequence => ({ name: c.name, steps: [c] });

// RollbackSpec's helpers: postItem creates the item PATCH and DELETE work on, deleteItems removes what a case
// left (both commit).
const POST_ITEM: WireCase = {
  name: "postItem",
  method: "POST",
  url: "items",
  headers: { prefer: "tx=commit, resolution=ignore-duplicates" },
  body: '{"id":0}',
  status: 201,
  text: "",
  expect: { "content-type": null },
};
const DELETE_ITEMS: WireCase = {
  name: "deleteItems",
  method: "DELETE",
  url: "items?id=lte.0",
  headers: { prefer: "tx=commit" },
  status: 204,
  text: "",
  expect: { "content-type": null, "content-length": null },
};
const getItems = (filter: string, json: unknown): WireCase => ({
  name: `get items?${filter}`,
  url: `items?${filter}`,
  status: 200,
  json,
});

/** RollbackSpec's `shouldRespondToReads`. */
function reads(prefer: string, applied: Record<string, RegExp>, label: string): Sequence[] {
  return [
    { name: "responds to GET", url: "items?id=eq.1", json: [{ id: 1 }], status: 200 },
    {
      name: "responds to HEAD",
      method: "HEAD",
      url: "items?id=eq.1",
      status: 200,
      text: "",
      expect: { "content-type": JSON_TYPE },
    },
    { name: "responds to GET on RPC", url: "rpc/search?id=1", json: [{ id: 1 }], status: 200 },
    {
      name: "responds to POST on RPC",
      method: "POST",
      url: "rpc/search",
      body: '{"id":1}',
      json: [{ id: 1 }],
      status: 200,
    },
  ].map((c) => one({ ...c, name: `${label}: ${c.name}`, headers: { prefer }, matches: applied }));
}

/** RollbackSpec's `shouldRaiseExceptions`: no preference applied, the error comes before the transaction ends. */
function exceptions(prefer: string, label: string): Sequence[] {
  const unique = err(
    "23505",
    'duplicate key value violates unique constraint "deferrable_unique_constraint_col_key"',
    "Key (col)=(1) already exists.",
  );
  return [
    one({
      name: `${label}: raises immediate constraints`,
      method: "POST",
      url: "rpc/raise_constraint",
      headers: { prefer },
      body: "",
      status: 409,
      json: unique,
    }),
    one({
      name: `${label}: raises deferred constraints`,
      method: "POST",
      url: "rpc/raise_constraint",
      headers: { prefer },
      body: '{"deferred": true}',
      status: 409,
      json: unique,
    }),
  ];
}

/** RollbackSpec's `shouldPersistMutations`. */
function persists(prefer: string, applied: Record<string, RegExp>, label: string): Sequence[] {
  const headers = { prefer };
  return [
    {
      name: `${label}: does persist post`,
      steps: [
        {
          name: "post",
          method: "POST",
          url: "items",
          headers,
          body: '{"id":0}',
          status: 201,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", [{ id: 0 }]),
        DELETE_ITEMS,
      ],
    },
    {
      name: `${label}: does persist put`,
      steps: [
        {
          name: "put",
          method: "PUT",
          url: "items?id=eq.0",
          headers,
          body: '{"id":0}',
          status: 201,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", [{ id: 0 }]),
        DELETE_ITEMS,
      ],
    },
    {
      name: `${label}: does persist patch`,
      steps: [
        POST_ITEM,
        {
          name: "patch",
          method: "PATCH",
          url: "items?id=eq.0",
          headers,
          body: '{"id":-1}',
          status: 200,
          json: [{ id: -1 }],
          matches: applied,
        },
        getItems("id=eq.0", []),
        getItems("id=eq.-1", [{ id: -1 }]),
        DELETE_ITEMS,
      ],
    },
    {
      name: `${label}: does persist delete`,
      steps: [
        POST_ITEM,
        {
          name: "delete",
          method: "DELETE",
          url: "items?id=eq.0",
          headers,
          status: 200,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", []),
      ],
    },
  ];
}

/** RollbackSpec's `shouldNotPersistMutations`. */
function rollsBack(prefer: string, applied: Record<string, RegExp>, label: string): Sequence[] {
  const headers = { prefer };
  return [
    {
      name: `${label}: does not persist post`,
      steps: [
        {
          name: "post",
          method: "POST",
          url: "items",
          headers,
          body: '{"id":0}',
          status: 201,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", []),
      ],
    },
    {
      name: `${label}: does not persist put`,
      steps: [
        {
          name: "put",
          method: "PUT",
          url: "items?id=eq.0",
          headers,
          body: '{"id":0}',
          status: 201,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", []),
      ],
    },
    {
      name: `${label}: does not persist patch`,
      steps: [
        {
          name: "patch",
          method: "PATCH",
          url: "items?id=eq.1",
          headers,
          body: '{"id":0}',
          status: 200,
          json: [{ id: 0 }],
          matches: applied,
        },
        getItems("id=eq.0", []),
        getItems("id=eq.1", [{ id: 1 }]),
      ],
    },
    {
      name: `${label}: does not persist delete`,
      steps: [
        {
          name: "delete",
          method: "DELETE",
          url: "items?id=eq.1",
          headers,
          status: 200,
          json: [{ id: 1 }],
          matches: applied,
        },
        getItems("id=eq.1", [{ id: 1 }]),
      ],
    },
  ];
}

const REPRESENTATION = "return=representation";
const COMMIT = "return=representation, tx=commit";
const ROLLBACK = "return=representation, tx=rollback";
// PostgREST's `matchHeaderValuePresent`: the value is within the header.
const NONE = {};
const COMMIT_APPLIED = { "preference-applied": /tx=commit/ };
const ROLLBACK_APPLIED = { "preference-applied": /tx=rollback/ };

/**
 * test/spec/Feature/RollbackSpec.hs: "tx-allow-override = true" (reads and exceptions without `Prefer: tx`, and
 * all of `tx=commit` and `tx=rollback`), and "tx-rollback-all = false, tx-allow-override = false" without
 * `Prefer: tx`, which persists its mutations as the platform's default does.
 */
const ROLLBACK_SPEC: Sequence[] = [
  ...reads(REPRESENTATION, NONE, "allowed, without Prefer tx"),
  ...exceptions(REPRESENTATION, "allowed, without Prefer tx"),
  ...reads(COMMIT, COMMIT_APPLIED, "allowed, Prefer tx=commit"),
  ...persists(COMMIT, COMMIT_APPLIED, "allowed, Prefer tx=commit"),
  ...exceptions(COMMIT, "allowed, Prefer tx=commit"),
  ...reads(ROLLBACK, ROLLBACK_APPLIED, "allowed, Prefer tx=rollback"),
  ...rollsBack(ROLLBACK, ROLLBACK_APPLIED, "allowed, Prefer tx=rollback"),
  ...exceptions(ROLLBACK, "allowed, Prefer tx=rollback"),
  ...reads(REPRESENTATION, NONE, "disallowed, without Prefer tx"),
  ...persists(REPRESENTATION, NONE, "disallowed, without Prefer tx"),
  ...exceptions(REPRESENTATION, "disallowed, without Prefer tx"),
];

/**
 * A default `Vary` came with PostgREST v16 (HttpHeaderSpec.hs, "Test HTTP Default Header"); v14 sends none, and
 * neither does the platform.
 */
const DEFAULT_VARY: WireCase[] = [
  {
    name: "no Vary header by default (v14)",
    url: "projects",
    status: 200,
    expect: { vary: null },
  },
];

/** HttpHeaderSpec.hs (v16): "Test HTTP Custom Header" (pre-request custom_vary_hdr), `response.headers` as in v14. */
const CUSTOM_VARY: WireCase[] = [
  {
    name: "Test default Vary header value is overridden in pre-request database function",
    url: "projects",
    status: 200,
    expect: { vary: "X-Test-Accept" },
  },
];

/**
 * test/spec/Feature/RpcPreRequestGucsSpec.hs (pre-request custom_headers). Its writes are rolled back here
 * (`Prefer: tx=rollback`), as PostgREST's spec server rolls back every case.
 */
const PRE_REQUEST_GUCS_SPEC: WireCase[] = [
  {
    name: "succeeds setting the headers on POST",
    method: "POST",
    url: "items",
    headers: { prefer: "tx=rollback" },
    body: '[{"id": 11111}]',
    status: 201,
    text: "",
    expect: { "content-type": null, "x-custom-header": "mykey=myval" },
  },
  {
    name: "succeeds setting the headers on GET",
    url: "items?id=eq.1",
    headers: { "user-agent": "MSIE 6.0" },
    status: 200,
    json: [{ id: 1 }],
    expect: { "cache-control": "no-cache, no-store, must-revalidate" },
  },
  {
    name: "succeeds setting the headers on HEAD",
    method: "HEAD",
    url: "items?id=eq.1",
    headers: { "user-agent": "MSIE 7.0" },
    status: 200,
    text: "",
    expect: { "content-type": JSON_TYPE, "cache-control": "no-cache, no-store, must-revalidate" },
  },
  {
    name: "succeeds setting the headers on HEAD (text/csv)",
    method: "HEAD",
    url: "projects",
    headers: { accept: "text/csv" },
    status: 200,
    text: "",
    expect: {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": "attachment; filename=projects.csv",
    },
  },
  {
    name: "succeeds setting the headers on PATCH",
    method: "PATCH",
    url: "items?id=eq.1",
    headers: { prefer: "tx=rollback" },
    body: '[{"id": 11111}]',
    status: 204,
    text: "",
    expect: { "content-type": null, "content-length": null, "x-custom-header": "mykey=myval" },
  },
  {
    name: "succeeds setting the headers on PUT",
    method: "PUT",
    url: "items?id=eq.1",
    headers: { prefer: "tx=rollback" },
    body: '[{"id": 1}]',
    status: 204,
    text: "",
    expect: { "content-type": null, "content-length": null, "x-custom-header": "mykey=myval" },
  },
  {
    name: "succeeds setting the headers on DELETE",
    method: "DELETE",
    url: "items?id=eq.1",
    headers: { prefer: "tx=rollback" },
    status: 204,
    text: "",
    expect: { "content-type": null, "content-length": null, "x-custom-header": "mykey=myval" },
  },
  {
    name: "can override the Content-Type header (table)",
    method: "HEAD",
    url: "clients?id=eq.1",
    status: 200,
    text: "",
    expect: { "content-type": "application/custom+json" },
  },
  {
    name: "can override the Content-Type header (function)",
    method: "HEAD",
    url: "rpc/getallprojects",
    status: 200,
    text: "",
    expect: { "content-type": "application/custom+json" },
  },
];

/** PostgREST's `matchServerTimingHasTiming` for each phase named. */
const timing = (...phases: string[]) => ({
  "server-timing": new RegExp(`^${phases.map((p) => `(?=.*\\b${p};dur=\\d+\\.\\d+)`).join("")}`),
});
const ALL_PHASES = timing("jwt", "parse", "plan", "transaction", "response");

/** test/spec/Feature/Query/ServerTimingSpec.hs (server-timing and db-plan enabled). */
const SERVER_TIMING_SPEC: WireCase[] = [
  {
    name: "works with get request",
    url: "organizations?id=eq.6",
    status: 200,
    json: [{ id: 6, name: "Oscorp", referee: 3, auditor: 4, manager_id: 6 }],
    expect: { "content-type": JSON_TYPE },
    matches: ALL_PHASES,
  },
  {
    name: "works with post request",
    method: "POST",
    url: "organizations?select=*",
    headers: { prefer: "return=representation" },
    body: '{"id":7,"name":"John","referee":null,"auditor":null,"manager_id":6}',
    status: 201,
    json: [{ id: 7, name: "John", referee: null, auditor: null, manager_id: 6 }],
    expect: { "content-type": JSON_TYPE },
    matches: ALL_PHASES,
  },
  {
    name: "works with patch request",
    method: "PATCH",
    url: "no_pk?b=eq.0",
    body: '{ "b": "1" }',
    status: 204,
    text: "",
    expect: { "content-type": null },
    matches: ALL_PHASES,
  },
  {
    name: "works with put request",
    method: "PUT",
    url: "tiobe_pls?name=eq.Python",
    headers: { prefer: "return=representation" },
    body: '[ { "name": "Python", "rank": 19 } ]',
    status: 200,
    json: [{ name: "Python", rank: 19 }],
    matches: ALL_PHASES,
  },
  {
    name: "works with delete request",
    method: "DELETE",
    url: "items?id=eq.1",
    status: 204,
    text: "",
    expect: { "content-type": null },
    matches: ALL_PHASES,
  },
  {
    name: "works with rpc call",
    method: "POST",
    url: "rpc/ret_point_overloaded",
    body: '{"x": 1, "y": 2}',
    status: 200,
    json: { x: 1, y: 2 },
    matches: ALL_PHASES,
  },
  { name: "works with root spec", method: "HEAD", url: "", status: 200, text: "", matches: ALL_PHASES },
  {
    name: "works with OPTIONS method (table)",
    method: "OPTIONS",
    url: "organizations",
    status: 200,
    text: "",
    matches: timing("jwt", "parse", "response"),
  },
  {
    name: "works with OPTIONS method (function)",
    method: "OPTIONS",
    url: "rpc/getallprojects",
    status: 200,
    text: "",
    matches: timing("jwt", "parse", "response"),
  },
  {
    name: "works with OPTIONS method (root)",
    method: "OPTIONS",
    url: "",
    status: 200,
    text: "",
    matches: timing("jwt", "parse", "response"),
  },
];

/** Signs a user JWT with the project's key: the claims the platform requires, then the spec's (less `drop`). */
async function userJwt(
  p: TestPlatform,
  claims: Record<string, unknown>,
  drop: string[] = [],
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const all: Record<string, unknown> = {
    role: "authenticated",
    aud: "authenticated",
    ref: "default",
    session_id: crypto.randomUUID(),
    sub: crypto.randomUUID(),
    iat: now,
    exp: now + 600,
    ...claims,
  };
  for (const name of drop) delete all[name];
  return await bareJwt(p, all);
}

/** An AuthSpec case: its token's claims (the spec's; `undefined` sends no JWT), or a raw Authorization value. */
interface AuthCase extends WireCase {
  claims?: Record<string, unknown>;
  /** Sends these claims signed as they are, without the platform's required ones. */
  bare?: boolean;
  /** The Authorization scheme (default `Bearer`). */
  scheme?: string;
}

const AUTHOR = { id: "jdoe" };
const invalidToken = (message: string) => ({
  "www-authenticate": `Bearer error="invalid_token", error_description="${message}"`,
});

/** test/spec/Feature/Auth/AuthSpec.hs (pre-request switch_role, as the spec's base config). */
const AUTH_SPEC: AuthCase[] = [
  {
    name: "denies access to tables that anonymous does not own",
    url: "authors_only",
    status: 401,
    json: err("42501", "permission denied for table authors_only"),
    expect: { "www-authenticate": "Bearer" },
    bytes: 96,
  },
  {
    name: "denies access to tables that postgrest_test_author does not own",
    url: "private_table",
    claims: AUTHOR,
    status: 403,
    json: err("42501", "permission denied for table private_table"),
    bytes: 97,
  },
  {
    name: "denies execution on functions that anonymous does not own",
    method: "POST",
    url: "rpc/privileged_hello",
    body: '{"name": "anonymous"}',
    status: 401,
  },
  {
    name: "allows execution on a function that postgrest_test_author owns",
    method: "POST",
    url: "rpc/privileged_hello",
    claims: AUTHOR,
    body: '{"name": "jdoe"}',
    status: 200,
    json: "Privileged hello to jdoe",
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "sql functions can read custom and standard claims variables",
    method: "POST",
    url: "rpc/reveal_big_jwt",
    claims: {
      sub: "fun",
      jti: "foo",
      nbf: 1300819380,
      exp: 9999999999,
      "http://postgrest.com/foo": true,
      iss: "joe",
      iat: 1300819380,
    },
    body: "{}",
    status: 200,
    json: [{
      iss: "joe",
      sub: "fun",
      exp: 9999999999,
      nbf: 1300819380,
      iat: 1300819380,
      jti: "foo",
      "http://postgrest.com/foo": true,
    }],
  },
  {
    name: "allows users with permissions to see their tables",
    url: "authors_only",
    claims: AUTHOR,
    status: 200,
  },
  {
    name: "works with tokens which have extra fields",
    url: "authors_only",
    claims: { id: "jdoe", key1: "value1", key2: "value2", key3: "value3", a: 1, b: 2, c: 3 },
    status: 200,
  },
  // this test will stop working 9999999999s after the UNIX EPOCH
  {
    name: "succeeds with an unexpired token",
    url: "authors_only",
    claims: { exp: 9999999999, id: "jdoe" },
    status: 200,
  },
  {
    name: "succeeds with a valid iat claim in jwt",
    url: "authors_only",
    claims: { iat: Math.floor(Date.now() / 1000) },
    status: 200,
  },
  {
    name: "fails when auth header is sent empty",
    url: "authors_only",
    headers: { authorization: "Bearer " },
    status: 401,
    json: err("PGRST301", "Empty JWT is sent in Authorization header"),
    expect: invalidToken("Empty JWT is sent in Authorization header"),
    bytes: 100,
  },
  {
    name: "fails with an expired token",
    url: "authors_only",
    claims: { exp: 1446678149, id: "jdoe" },
    status: 401,
    json: err("PGRST303", "JWT expired"),
    expect: invalidToken("JWT expired"),
  },
  {
    name: "hides tables from users with invalid JWT",
    url: "authors_only",
    headers: {
      authorization:
        "Bearer ey9zdGdyZXN0X3Rlc3RfYXV0aG9yIiwiaWQiOiJqZG9lIn0.y4vZuu1dDdwAl0-S00MCRWRYMlJ5YAMSir6Es6WtWx0",
    },
    status: 401,
    json: err("PGRST301", "Expected 3 parts in JWT; got 2"),
    expect: invalidToken("Expected 3 parts in JWT; got 2"),
  },
  {
    name: "should fail when jwt contains no claims",
    url: "authors_only",
    claims: {},
    bare: true,
    status: 401,
  },
  {
    name: "hides tables from users with JWT that contain no claims about role",
    url: "authors_only",
    claims: { id: "jdoe", role: undefined },
    status: 401,
  },
  {
    name: "fails when the exp claim is not a number",
    url: "authors_only",
    claims: { exp: "invalid" },
    status: 401,
    json: err("PGRST303", "The JWT 'exp' claim must be a number"),
  },
  {
    name: "fails when the nbf claim is not a number",
    url: "authors_only",
    claims: { nbf: "invalid" },
    status: 401,
    json: err("PGRST303", "The JWT 'nbf' claim must be a number"),
  },
  {
    name: "fails when the iat claim is not a number",
    url: "authors_only",
    claims: { iat: "invalid" },
    status: 401,
    json: err("PGRST303", "The JWT 'iat' claim must be a number"),
  },
  {
    name: "fails when the aud claim has a single value and it's not a string",
    url: "authors_only",
    claims: { aud: { invalid: "value" } },
    status: 401,
    json: err("PGRST303", "The JWT 'aud' claim must be a string or an array of strings"),
  },
  {
    // The spec's array is [{…}, "test"]; here its string is the audience the platform accepts, so that only the
    // array's other element is wrong.
    name: "fails when the aud claim is an array but it has non-string elements",
    url: "authors_only",
    claims: { aud: [{ invalid: "value" }, "authenticated"] },
    status: 401,
    json: err("PGRST303", "The JWT 'aud' claim must be a string or an array of strings"),
  },
  {
    name: "custom pre-request proc acting on id claim: able to switch to postgrest_test_author role (id=1)",
    method: "POST",
    url: "rpc/get_current_user",
    claims: { id: 1 },
    body: "{}",
    status: 200,
    json: "authenticated",
  },
  {
    name: "custom pre-request proc acting on id claim: able to switch to postgrest_test_default_role (id=2)",
    method: "POST",
    url: "rpc/get_current_user",
    claims: { id: 2 },
    body: "{}",
    status: 200,
    json: "anon",
  },
  {
    name: "custom pre-request proc acting on id claim: raises error (id=3)",
    method: "POST",
    url: "rpc/get_current_user",
    claims: { id: 3 },
    body: "{}",
    status: 400,
    json: err("P0001", "Disabled ID --> 3", null, "Please contact administrator"),
  },
  { name: "allows 'Bearer' as authentication scheme", url: "authors_only", claims: AUTHOR, status: 200 },
  {
    name: "allows 'bearer' as authentication scheme",
    url: "authors_only",
    claims: AUTHOR,
    scheme: "bearer",
    status: 200,
  },
];

/** Runs an AuthSpec case with the public key, and its JWT when it has claims. */
async function runAuthCase(p: TestPlatform, c: AuthCase): Promise<void> {
  const headers = { ...c.headers };
  if (c.claims) {
    const claims = Object.fromEntries(Object.entries(c.claims).filter(([, v]) => v !== undefined));
    const drop = Object.entries(c.claims).filter(([, v]) => v === undefined).map(([k]) => k);
    const token = c.bare ? await bareJwt(p, claims) : await userJwt(p, claims, drop);
    headers.authorization = `${c.scheme ?? "Bearer"} ${token}`;
  }
  await runWireCase(p, { ...c, headers, anon: true });
}

/** Signs exactly these claims with the project's key. */
async function bareJwt(p: TestPlatform, claims: Record<string, unknown>): Promise<string> {
  const project = await p.platform.projects.get("default");
  const key = await p.platform.projects.signingKey("default");
  return await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: project.jwt_kid }).sign(key);
}

/** PATCHes the project's data settings and checks it took. */
async function setSettings(p: TestPlatform, body: Record<string, unknown>): Promise<void> {
  const res = await p.fetch("/v1/project/data-settings", {
    method: "PATCH",
    headers: { apikey: p.secretKey },
    json: body,
  });
  assertEquals(res.status, 200, await res.text());
}

Deno.test("PostgREST's MultipleSchemaSpec on /rest/v1", async (t) => {
  const p = await startPlatform({ DATA_SCHEMAS: `v1,v2,${SPECIAL}` });
  try {
    await ownerSql(p, SCHEMAS_SQL);
    for (const c of MULTIPLE_SCHEMA_SPEC) await t.step(c.name, () => runWireCase(p, c));
    for (const c of OPENAPI_SPEC) {
      await t.step(`OpenAPI: ${c.name}`, async () => {
        const headers: Record<string, string> = { apikey: p.secretKey };
        if (c.profile) headers["accept-profile"] = c.profile;
        const res = await p.fetch("/rest/v1/", { headers });
        const doc = await res.json();
        assertEquals(res.status, 200);
        assertEquals(res.headers.get("content-profile"), c.schema);
        assertEquals(doc.definitions?.[c.table], c.def);
      });
    }
  } finally {
    await p.close();
  }
});

Deno.test("PostgREST's RollbackSpec, HttpHeaderSpec, AuthSpec, RpcPreRequestGucsSpec, ServerTimingSpec", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    await t.step("RollbackSpec", async (t) => {
      for (const s of ROLLBACK_SPEC) {
        await t.step(s.name, async () => {
          for (const c of s.steps) await runWireCase(p, c);
        });
      }
    });
    await t.step("HttpHeaderSpec", async (t) => {
      for (const c of DEFAULT_VARY) await t.step(c.name, () => runWireCase(p, c));
      await setSettings(p, { pre_request: "public.custom_vary_hdr" });
      for (const c of CUSTOM_VARY) await t.step(c.name, () => runWireCase(p, c));
    });
    await t.step("AuthSpec", async (t) => {
      await setSettings(p, { pre_request: "public.switch_role" });
      for (const c of AUTH_SPEC) await t.step(c.name, () => runAuthCase(p, c));
      await t.step("recovers after 401 error with logged in user", async () => {
        const refused = await p.fetch("/rest/v1/authors_only", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { owner: "jdoe", secret: "test content" },
        });
        assertEquals(refused.status, 401);
        await refused.body?.cancel();
        const token = await userJwt(p, AUTHOR);
        const auth = { apikey: p.publicKey, authorization: `Bearer ${token}` };
        const problem = await p.fetch("/rest/v1/rpc/problem", { method: "POST", headers: auth });
        await problem.body?.cancel();
        await runWireCase(p, {
          name: "read",
          url: "authors_only",
          headers: { authorization: `Bearer ${token}` },
          anon: true,
          status: 200,
        });
      });
    });
    await t.step("RpcPreRequestGucsSpec", async (t) => {
      await setSettings(p, { pre_request: "custom_headers" });
      for (const c of PRE_REQUEST_GUCS_SPEC) await t.step(c.name, () => runWireCase(p, c));
      await setSettings(p, { pre_request: null });
    });
    await t.step("ServerTimingSpec", async (t) => {
      await setSettings(p, { server_timing: true, plan: true });
      for (const c of SERVER_TIMING_SPEC) await t.step(c.name, () => runWireCase(p, c));
    });
  } finally {
    await p.close();
  }
});
