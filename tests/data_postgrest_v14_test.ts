// PostgREST v14's answers where they differ from what a later PostgREST (v16) or a first reading of the docs
// gives, row by row: writes with nothing to set, bodies that are no rows, function arguments and overloads, the
// headers of calls and of 416, methods a resource does not take. Each row is what PostgREST v14.17 answers
// (its source and spec suite at that tag).
import { LIBRARY_SQL, ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const JSON_TYPE = "application/json; charset=utf-8";

const SQL = `
create function add_them(a int, b int) returns int language sql immutable as $$ select a + b $$;
create function do_void() returns void language sql volatile as $$ select 1 $$;
create function sayhello(name text) returns text language sql immutable as $f$ select 'Hello, ' || name $f$;
create function arrsum(v int[]) returns int language sql immutable as $$ select sum(x)::int from unnest(v) x $$;
create function vsum(variadic v int[]) returns int language sql immutable as
  $$ select sum(x)::int from unnest(v) x $$;
create function noargs() returns int language sql immutable as $$ select 7 $$;
create function get_tbl(lim int default 10) returns table (a int, b text) language sql stable as
  $$ select g, 'x' || g from generate_series(1, lim) g $$;
create function unresolvable(a text) returns text language sql as $$ select 'text' $$;
create function unresolvable(a int) returns text language sql as $$ select 'int' $$;
-- Unnamed parameters: one of a type a body can be whole is callable, with {"": value} or the body.
create function poly_return(bool) returns int language sql as 'select 1';
create function poly_return(int) returns int language sql as 'select 2';
create function poly_return(text) returns text language sql as $$ select 'foo' $$;
create function unnamed_text(text) returns int language sql as 'select 1';
create function unnamed_int(int) returns int language sql as 'select 1';
create function unnamed_default() returns int language sql as 'select 1';
create function unnamed_default(int default 42) returns int language sql as 'select 2';
create function unnamed_default(text default 'default') returns text language sql as $$ select 'foo' $$;
create function blurb(books) returns text language sql stable as $$ select substring($1.title, 1, 3) $$;
create table tree (id int primary key, parent_id int references tree (id), name text);
insert into tree values (1, null, 'root'), (2, 1, 'a'), (3, 1, 'b');
create table meta (id int primary key, doc jsonb, n int);
insert into meta values (1, '{"a": {"b": 1}}', 5);
`;

const CASES: WireCase[] = [
  // Writes whose body sets nothing change no row, whatever the filters say.
  { name: "PATCH {} with a filter: 204", method: "PATCH", url: "books?id=eq.1", body: "{}", status: 204 },
  {
    name: "PATCH [] with a filter and return=representation: 200 []",
    method: "PATCH",
    url: "books?id=eq.1",
    body: "[]",
    headers: { prefer: "return=representation" },
    status: 200,
    json: [],
    expect: { "content-range": "*/*" },
  },
  { name: "PATCH [{}]: 204", method: "PATCH", url: "books?id=eq.1", body: "[{}]", status: 204 },
  {
    name: "PATCH with a number: no row to set, 204",
    method: "PATCH",
    url: "books?id=eq.1",
    body: "1",
    status: 204,
  },
  {
    name: "POST of a string: no row, 201",
    method: "POST",
    url: "books",
    body: '"x"',
    headers: { prefer: "return=representation" },
    status: 201,
    json: [],
  },
  {
    name: "POST of an array of numbers: 400 PGRST102",
    method: "POST",
    url: "books",
    body: "[1,2]",
    status: 400,
    json: err("PGRST102", "All object keys must match"),
  },
  {
    name: "the books are as they were",
    url: "books?select=id,title&id=eq.1",
    status: 200,
    json: [{ id: 1, title: "The Dispossessed" }],
  },
  // limit and offset on writes are ignored (v14 dropped limited updates and deletes).
  {
    name: "DELETE with a limit: the limit is ignored",
    method: "DELETE",
    url: "books?id=eq.999&limit=1",
    status: 204,
    expect: { "content-range": "*/*" },
  },
  // Arguments in the query.
  {
    name: "repeated argument: the last value",
    url: "rpc/sayhello?name=ignored&name=world",
    status: 200,
    json: "Hello, world",
  },
  {
    name: "repeated array argument (not variadic): the last value, not an array",
    url: "rpc/arrsum?v=1&v=2",
    status: 400,
    json: err(
      "22P02",
      'malformed array literal: "2"',
      'Array value must start with "{" or dimension information.',
    ),
  },
  { name: "an array argument as a literal", url: "rpc/arrsum?v=%7B1,2%7D", status: 200, json: 3 },
  { name: "a variadic argument repeated", url: "rpc/vsum?v=1&v=2&v=3", status: 200, json: 6 },
  {
    name: "a variadic argument given one array literal: one element",
    url: "rpc/vsum?v=%7B1,2,3%7D",
    status: 400,
    json: err("22P02", 'invalid input syntax for type integer: "{1,2,3}"'),
  },
  // Call bodies.
  {
    name: "return=minimal on a call: ignored, the result",
    method: "POST",
    url: "rpc/add_them",
    body: '{"a":1,"b":2}',
    headers: { prefer: "return=minimal" },
    status: 200,
    json: 3,
    expect: { "content-range": "0-0/*", "preference-applied": null },
  },
  {
    name: "a void function: 204 with Content-Range 0-0/*",
    method: "POST",
    url: "rpc/do_void",
    status: 204,
    expect: { "content-range": "0-0/*", "content-type": null },
  },
  {
    name: "a call with []: no arguments",
    method: "POST",
    url: "rpc/noargs",
    body: "[]",
    status: 200,
    json: 7,
  },
  {
    name: "a call with a number: no arguments",
    method: "POST",
    url: "rpc/noargs",
    body: "1",
    status: 200,
    json: 7,
  },
  {
    name: "a call with an array of numbers: 400 PGRST102",
    method: "POST",
    url: "rpc/add_them",
    body: "[1,2]",
    status: 400,
    json: err("PGRST102", "All object keys must match"),
  },
  // Overloads and unnamed parameters.
  {
    name: "PGRST203 lists the candidates in PostgREST's order (integer before text)",
    method: "POST",
    url: "rpc/unresolvable",
    body: '{"a":"x"}',
    status: 300,
    json: err(
      "PGRST203",
      "Could not choose the best candidate function between: public.unresolvable(a => integer), " +
        "public.unresolvable(a => text)",
      null,
      "Try renaming the parameters or the function itself in the database so function overloading can be resolved",
    ),
  },
  {
    name: 'an unnamed text parameter given by {"": value}',
    method: "POST",
    url: "rpc/unnamed_text",
    body: '{"":"test"}',
    status: 200,
    json: 1,
  },
  {
    name: "overloads of one unnamed parameter: only the text one is a function of the API",
    method: "POST",
    url: "rpc/poly_return",
    body: '{"":true}',
    status: 200,
    json: "foo",
  },
  {
    name: "unnamed defaults: the integer overload is not a candidate",
    method: "POST",
    url: "rpc/unnamed_default",
    status: 300,
    json: err(
      "PGRST203",
      "Could not choose the best candidate function between: public.unnamed_default(), " +
        "public.unnamed_default( => text)",
      null,
      "Try renaming the parameters or the function itself in the database so function overloading can be resolved",
    ),
  },
  {
    name: "a computed field is no function of the API: PGRST202 without a hint",
    method: "POST",
    url: "rpc/blurb",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.blurb without parameters in the schema cache",
      "Searched for the function public.blurb without parameters or with a single unnamed json/jsonb parameter, " +
        "but no matches were found in the schema cache.",
    ),
  },
  // 416 is an answer with the read's headers, not an error.
  {
    name: "an offset past the total with count=exact: 416 with the read's headers",
    url: "books?select=id&offset=10",
    headers: { prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 10 was requested, but there are only 5 rows.",
    ),
    expect: {
      "content-range": "*/5",
      "content-location": "/books?offset=10&select=id",
      "preference-applied": "count=exact",
      "content-type": JSON_TYPE,
      "proxy-status": null,
    },
  },
  // Methods a resource does not take.
  {
    name: "POST on the root: 405 PGRST117",
    method: "POST",
    url: "",
    body: "{}",
    status: 405,
    json: err("PGRST117", "Unsupported HTTP method: POST"),
  },
  {
    name: "an unknown method on a table: 405 PGRST117",
    method: "PURGE",
    url: "books",
    status: 405,
    json: err("PGRST117", "Unsupported HTTP method: PURGE"),
  },
  {
    name: "PATCH on a function: 405 PGRST101",
    method: "PATCH",
    url: "rpc/noargs",
    body: "{}",
    status: 405,
    json: err("PGRST101", "Cannot use the PATCH method on RPC"),
  },
  // A self-reference: by the table's name the children, by the column the parent, by the constraint nothing.
  {
    name: "self-reference by the table's name: the children (one-to-many)",
    url: "tree?select=id,tree(id)&id=eq.1",
    status: 200,
    json: [{ id: 1, tree: [{ id: 2 }, { id: 3 }] }],
  },
  {
    name: "self-reference hinted by the referencing column: the children",
    url: "tree?select=id,tree!parent_id(id)&id=eq.1",
    status: 200,
    json: [{ id: 1, tree: [{ id: 2 }, { id: 3 }] }],
  },
  {
    name: "self-reference by the column: the parent",
    url: "tree?select=id,parent_id(id)&id=eq.2",
    status: 200,
    json: [{ id: 2, parent_id: { id: 1 } }],
  },
  {
    name: "self-reference hinted by the constraint: no relationship",
    url: "tree?select=id,tree!tree_parent_id_fkey(id)",
    status: 400,
    json: err(
      "PGRST200",
      "Could not find a relationship between 'tree' and 'tree' in the schema cache",
      "Searched for a foreign key relationship between 'tree' and 'tree' using the hint " +
        "'tree_parent_id_fkey' in the schema 'public', but no matches were found.",
    ),
  },
  // Errors name the relations as PostgREST's SQL does.
  {
    name: "an unknown column of an embedded table: <table>_<depth>",
    url: "books?select=id,authors(nope)",
    status: 400,
    json: err("42703", "column authors_1.nope does not exist"),
  },
  {
    name: "the same table embedded twice under one name: 42712",
    url: "books?select=id,authors(id),authors(name)",
    status: 400,
    json: err("42712", 'table name "books_authors_1" specified more than once'),
  },
  {
    name: "like on an integer column: integer ~~ unknown",
    url: "meta?n=like.5*",
    status: 404,
    json: err(
      "42883",
      "operator does not exist: integer ~~ unknown",
      null,
      "No operator matches the given name and argument types. You might need to add explicit type casts.",
    ),
  },
  {
    name: "an arrow on text: text -> unknown",
    url: "meta?select=x:doc->>a->b",
    status: 404,
    json: err(
      "42883",
      "operator does not exist: text -> unknown",
      null,
      "No operator matches the given name and argument types. You might need to add explicit type casts.",
    ),
  },
  { name: "an arrow path on jsonb", url: "meta?select=doc->a->b", status: 200, json: [{ b: 1 }] },
  {
    name: "an Authorization that is not Bearer: no token, the apikey's role",
    url: "books?select=id&id=eq.1",
    headers: { authorization: "Basic abc" },
    anon: true,
    status: 200,
    json: [{ id: 1 }],
  },
  // Headers v16 added are not sent.
  {
    name: "no Vary, no Warning",
    url: "books?select=id,w:authors(id)&authors.id=eq.1&id=eq.1",
    status: 200,
    json: [{ id: 1, w: { id: 1 } }],
    expect: { vary: null, warning: null },
  },
];

Deno.test("/rest/v1 answers as PostgREST v14", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL + SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});
