// PostgREST v14's answers to function calls the platform once answered otherwise, row by row: functions returning
// `record` or `setof record`, a domain over a composite type, `char`/`bit` parameters, and `columns=` on a call.
// Each row is what PostgREST v14.17 answers (its RpcSpec and fixture at that tag).
import { ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";
import { assertEquals } from "./assert.ts";

const JSON_TYPE = "application/json; charset=utf-8";

const SQL = `
create table clients (id int primary key, name text not null);
create table projects (id int primary key, name text not null, client_id int references clients (id));
insert into clients values (1, 'Microsoft'), (2, 'Apple');
insert into projects values (1, 'Windows 7', 1), (2, 'Windows 10', 1), (3, 'IOS', 2);
create function returns_record() returns record language sql as $$ select * from projects order by id limit 1 $$;
create function returns_record_params(id int, name text) returns record language sql as
  $$ select * from projects p where p.id = $1 and p.name like $2 $$;
create function returns_setof_record() returns setof record language sql as
  $$ select * from projects order by id limit 2 $$;
create function returns_setof_record_params(id int, name text) returns setof record language sql as
  $$ select * from projects p where p.id >= $1 and p.name like $2 order by p.id $$;
create type point_2d as (x int, y int);
create domain composite_domain as point_2d;
create function ret_composite_domain() returns composite_domain language sql as
  $$ select row(10, 5)::composite_domain $$;
create domain projects_domain as projects;
create function getproject_domain(id int) returns setof projects_domain language sql stable as
  $$ select projects::projects_domain from projects where id = $1 $$;
create table bitchar_with_length (bit bit(5), char char(5), bit_arr bit(5)[], char_arr char(5)[]);
create function char_param_select(char_ char(4), char_arr char(4)[]) returns table(char_ char, char_arr char[])
  language sql as $$ select $1, $2 $$;
create function bit_param_select(bit_ char(4), bit_arr char(4)[]) returns table(bit_ char, bit_arr char[])
  language sql as $$ select $1, $2 $$;
create function char_param_insert(char_ char(4), char_arr char(4)[]) returns void language sql as
  $$ insert into bitchar_with_length(char, char_arr) values ($1, $2) $$;
create function bit_param_insert(bit_ bit(4), bit_arr bit(4)[]) returns void language sql as
  $$ insert into bitchar_with_length(bit, bit_arr) values ($1, $2) $$;
create function sayhello(name text) returns text language sql immutable as $f$ select 'Hello, ' || name $f$;
`;

const WINDOWS_7 = { id: 1, name: "Windows 7", client_id: 1 };
const WINDOWS_10 = { id: 2, name: "Windows 10", client_id: 1 };

/** Checks only an error's code and message (PostgREST's fuzzy hint is not what these rows are about). */
const codeAndMessage = (code: string, message: string) => (body: string) => {
  const e = JSON.parse(body);
  assertEquals([e.code, e.message], [code, message]);
};

const CASES: WireCase[] = [
  // A `record` result without OUT parameters is one value: the row, its columns named as the query named them.
  {
    name: "returns record: the row as an object",
    method: "POST",
    url: "rpc/returns_record",
    body: "",
    status: 200,
    json: WINDOWS_7,
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "returns record with arguments",
    method: "POST",
    url: "rpc/returns_record_params",
    body: '{"id": 1, "name": "Windows%"}',
    status: 200,
    json: WINDOWS_7,
  },
  {
    name: "returns setof record: the rows",
    method: "POST",
    url: "rpc/returns_setof_record",
    body: "",
    status: 200,
    json: [WINDOWS_7, WINDOWS_10],
  },
  {
    name: "returns setof record with arguments",
    method: "POST",
    url: "rpc/returns_setof_record_params",
    body: '{"id": 1, "name": "Windows%"}',
    status: 200,
    json: [WINDOWS_7, WINDOWS_10],
  },
  {
    name: "returns setof record by GET",
    url: "rpc/returns_setof_record_params?id=2&name=Windows%25",
    status: 200,
    json: [WINDOWS_10],
  },
  // A domain over a composite type returns that type's row, and a domain over a table's row embeds as the table.
  {
    name: "returns a domain over a composite type: the whole row",
    method: "POST",
    url: "rpc/ret_composite_domain",
    body: "{}",
    status: 200,
    json: { x: 10, y: 5 },
  },
  {
    name: "returns setof a domain over a table: embeds through the table's keys",
    url: "rpc/getproject_domain?id=1&select=id,name,client:clients(id)",
    status: 200,
    json: [{ id: 1, name: "Windows 7", client: { id: 1 } }],
  },
  // Parameters carry no length: a char or bit argument of any length reaches the function, which then decides.
  {
    name: "char(n) parameters take longer values (GET)",
    url: "rpc/char_param_select?char_=abcdefg&char_arr={abc,abcdefg}",
    status: 200,
    json: [{ char_: "abcdefg", char_arr: ["abc", "abcdefg"] }],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "char(n) parameters: the column's length refuses it",
    method: "POST",
    url: "rpc/char_param_insert",
    body: '{ "char_": "abcdefg", "char_arr": "{abc,abcdefg}" }',
    status: 400,
    json: err("22001", "value too long for type character(5)"),
    bytes: 92,
  },
  {
    name: "bit(n) parameters take longer values (GET)",
    url: "rpc/bit_param_select?bit_=101010&bit_arr={101,101010}",
    status: 200,
    json: [{ bit_: "101010", bit_arr: ["101", "101010"] }],
  },
  {
    name: "bit(n) parameters: the column's length refuses it",
    method: "POST",
    url: "rpc/bit_param_insert",
    body: '{ "bit_": "101010", "bit_arr": "{101,101010}" }',
    status: 400,
    json: err("22026", "bit string length 6 does not match type bit(5)"),
    bytes: 102,
  },
  // `columns=` names the arguments: other keys of the body are ignored, a missing one is null.
  {
    name: "columns= ignores the body's other keys",
    method: "POST",
    url: "rpc/sayhello?columns=name",
    body: '{"name": "John", "smth": "here", "other": "stuff", "fake_id": 13}',
    status: 200,
    json: "Hello, John",
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "columns= naming a key the body lacks: null argument",
    method: "POST",
    url: "rpc/sayhello?columns=name",
    body: '{"smth": "here"}',
    status: 200,
    json: null,
  },
  {
    name: "columns= naming no parameter: 404 PGRST202",
    method: "POST",
    url: "rpc/sayhello?columns=nope",
    body: '{"name": "John"}',
    status: 404,
    check: codeAndMessage(
      "PGRST202",
      "Could not find the function public.sayhello(nope) in the schema cache",
    ),
  },
];

Deno.test("/rest/v1 calls answer as PostgREST v14", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});
