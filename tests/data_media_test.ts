// Media types on /rest/v1 as PostgREST (v12–v14) handles them: CSV, form and raw bodies, CSV answers, the
// EXPLAIN plan media type (DATA_PLAN on), and the shapes of function results.
import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql, restClient } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create function echo_text(text) returns text language sql immutable as $$ select $1 $$;
create function byte_count(bytea) returns int language sql immutable as $$ select length($1) $$;
create function add_them(a int, b int) returns int language sql immutable as $$ select a + b $$;
create function with_default(a int, b int default 10) returns int language sql immutable as $$ select a + b $$;
create function sum_all(variadic v int[]) returns int language sql immutable as
  $$ select sum(x)::int from unnest(v) x $$;
create function doubled(a int, out twice int) language sql immutable as $$ select a * 2 $$;
create function both_ways(a int, out n int, out t text) language sql immutable as $$ select a, a::text $$;
create function squares(n int) returns table (i int, sq int) language sql immutable as
  $$ select g, g * g from generate_series(1, n) g $$;
create function upto(n int) returns setof int language sql immutable as $$ select generate_series(1, n) $$;
create function nothing() returns void language sql as $$ select $$;
create function count_of(arr int[]) returns int language sql immutable as $$ select cardinality(arr) $$;
create function keys_of(body jsonb) returns text[] language sql immutable as
  $$ select array(select jsonb_object_keys(body) order by 1) $$;
create function add_book(id int, title text) returns int language sql as
  $$ insert into books (id, title) values (id, title) returning id $$;
create domain app_uuid as uuid;
create table profiles (id app_uuid primary key, name text);
insert into profiles values ('846c4ffd-92ce-4de7-8d11-8e29929f4ec4', 'John Doe');
create function app_uuid_json(app_uuid) returns json language sql immutable as
  $$ select to_json(encode(uuid_send($1), 'base64')) $$;
create cast (app_uuid as json) with function app_uuid_json(app_uuid) as implicit;
create function app_uuid(json) returns app_uuid language sql immutable as
  $$ select substring(decode($1 #>> '{}', 'base64')::text from 3)::uuid $$;
create cast (json as app_uuid) with function app_uuid(json) as implicit;
create function app_uuid(text) returns app_uuid language sql immutable as
  $$ select substring(decode($1, 'base64')::text from 3)::uuid $$;
create cast (text as app_uuid) with function app_uuid(text) as implicit;
`;

/** The two ids of the domain representation cases, as their base64 representation. */
const JOHN = "hGxP/ZLOTeeNEY4pkp9OxA==";
const JANE = "J6hUdjGmSXyrfB0Vo2pQ7Q==";

const JSON_TYPE = "application/json; charset=utf-8";
const PLAN_JSON = 'application/vnd.pgrst.plan+json; for="application/json"; charset=utf-8';
const ROLLBACK = { prefer: "return=representation, tx=rollback" };

const CASES: WireCase[] = [
  // Request bodies.
  {
    name: "a CSV insert: header = columns, NULL = null, quoted fields",
    method: "POST",
    url: "books?select=id,title,price",
    headers: { "content-type": "text/csv", ...ROLLBACK },
    body: 'id,title,price\n10,"Csv, the ""book""",NULL\r\n11,Plain,3.50\n',
    status: 201,
    json: [{ id: 10, title: 'Csv, the "book"', price: null }, { id: 11, title: "Plain", price: 3.5 }],
  },
  {
    name: "a CSV row with another number of fields → 400 PGRST102",
    method: "POST",
    url: "counters",
    headers: { "content-type": "text/csv" },
    body: "name,value\nx\n",
    status: 400,
    json: err("PGRST102", "Line 2 has 1 field, the header 2"),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "a CSV PATCH of one row updates with its values",
    method: "PATCH",
    url: "counters?name=eq.a",
    headers: { "content-type": "text/csv; charset=utf-8", ...ROLLBACK },
    body: "value,note\n7,NULL\n",
    status: 200,
    json: [{ name: "a", value: 7, note: null }],
  },
  {
    name: "a form body inserts one row of text values",
    method: "POST",
    url: "counters",
    headers: { "content-type": "application/x-www-form-urlencoded", ...ROLLBACK },
    body: "name=f+1&value=3",
    status: 201,
    json: [{ name: "f 1", value: 3, note: "fresh" }],
  },
  {
    name: "text/plain on a table → 400 PGRST102",
    method: "PATCH",
    url: "counters?name=eq.a",
    headers: { "content-type": "text/plain" },
    body: "x",
    status: 400,
    json: err("PGRST102", "Content-Type not acceptable: text/plain"),
  },
  {
    name: "text/plain goes whole to a single unnamed text parameter",
    method: "POST",
    url: "rpc/echo_text",
    headers: { "content-type": "text/plain" },
    body: 'hello, "world"',
    status: 200,
    json: 'hello, "world"',
  },
  {
    name: "application/octet-stream goes whole to a single unnamed bytea parameter",
    method: "POST",
    url: "rpc/byte_count",
    headers: { "content-type": "application/octet-stream" },
    body: "abcdé",
    status: 200,
    json: 6,
  },
  {
    name: "text/plain to a function without an unnamed text parameter → 404 PGRST202",
    method: "POST",
    url: "rpc/add_them",
    headers: { "content-type": "text/plain" },
    body: "1",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.add_them in the schema cache",
      "Searched for the function public.add_them with a single unnamed text parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "text/xml looks for a single unnamed xml parameter",
    method: "POST",
    url: "rpc/echo_text",
    headers: { "content-type": "text/xml" },
    body: "<a/>",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.echo_text in the schema cache",
      "Searched for the function public.echo_text with a single unnamed xml parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "form fields are a call's arguments",
    method: "POST",
    url: "rpc/add_them",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "a=1&b=2",
    status: 200,
    json: 3,
  },
  {
    name: "form fields naming no parameter: no json/jsonb fallback in the details",
    method: "POST",
    url: "rpc/add_them",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "a=1",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.add_them(a) in the schema cache",
      "Searched for the function public.add_them with parameter a, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.add_them(a, b)",
    ),
  },
  {
    // PostgREST v14 calls with the first row's arguments (RpcSpec: "only takes the first object").
    name: "a CSV call: the first row's arguments",
    method: "POST",
    url: "rpc/squares",
    headers: { "content-type": "text/csv" },
    body: "n\n2\n1\n",
    status: 200,
    json: [{ i: 1, sq: 1 }, { i: 2, sq: 4 }],
  },
  {
    name: "a JSON array of objects: the first object's arguments",
    method: "POST",
    url: "rpc/squares",
    body: '[{"n":2},{"n":1}]',
    status: 200,
    json: [{ i: 1, sq: 1 }, { i: 2, sq: 4 }],
  },
  {
    name: "an array of objects with other keys → 400 PGRST102",
    method: "POST",
    url: "rpc/squares",
    body: '[{"n":2},{"m":1}]',
    status: 400,
    json: err("PGRST102", "All object keys must match"),
  },
  // Function result shapes.
  // PostgREST's RpcSpec: "returns an object result when there is a single OUT param" ({"num_plus_one":6}).
  { name: "one OUT parameter: one object", url: "rpc/doubled?a=4", status: 200, json: { twice: 8 } },
  {
    name: "several OUT parameters: one object",
    url: "rpc/both_ways?a=4",
    status: 200,
    json: { n: 4, t: "4" },
  },
  {
    name: "returns table: the rows",
    url: "rpc/squares?n=2",
    status: 200,
    json: [{ i: 1, sq: 1 }, { i: 2, sq: 4 }],
  },
  { name: "setof a scalar: an array of values", url: "rpc/upto?n=3", status: 200, json: [1, 2, 3] },
  { name: "void → 204", method: "POST", url: "rpc/nothing", status: 204, expect: { "content-type": null } },
  { name: "variadic: repeated parameters", url: "rpc/sum_all?v=1&v=2&v=3", status: 200, json: 6 },
  {
    name: "variadic: a JSON array",
    method: "POST",
    url: "rpc/sum_all",
    body: '{"v":[4,5]}',
    status: 200,
    json: 9,
  },
  {
    // PostgREST v14: a repeated name that is not variadic takes its last value, here no array literal.
    name: "an array parameter: repeated parameters, the last one",
    url: "rpc/count_of?arr=1&arr=2",
    status: 400,
    json: err(
      "22P02",
      'malformed array literal: "2"',
      'Array value must start with "{" or dimension information.',
    ),
  },
  { name: "an array parameter: an array literal", url: "rpc/count_of?arr={1,2,3}", status: 200, json: 3 },
  {
    name: "Prefer: params=single-object passes the body whole",
    method: "POST",
    url: "rpc/keys_of",
    headers: { prefer: "params=single-object" },
    body: '{"b":1,"a":2}',
    status: 200,
    json: ["a", "b"],
  },
  { name: "a default argument left out", url: "rpc/with_default?a=1", status: 200, json: 11 },
  {
    name: "one object asked of a scalar: the value",
    url: "rpc/add_them?a=1&b=2",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 200,
    json: 3,
    expect: { "content-type": "application/vnd.pgrst.object+json; charset=utf-8" },
  },
  {
    name: "one object asked of a set of three → 406 PGRST116",
    url: "rpc/upto?n=3",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 406,
    json: err("PGRST116", "Cannot coerce the result to a single JSON object", "The result contains 3 rows"),
  },
  // CSV answers, byte for byte as PostgreSQL prints records.
  {
    name: "CSV: header, quoting, numerics, arrays, ranges, booleans",
    url: "books?select=id,title,price,tags,in_print,pages,rating&id=in.(1,4,5)&order=id",
    headers: { accept: "text/csv" },
    status: 200,
    text:
      'id,title,price,tags,in_print,pages,rating\n1,"The Dispossessed",12.50,"{scifi,classic}",t,"[1,387)",5\n' +
      '4,"The Cyberiad",15.00,"{scifi,humor}",t,"[1,295)",\n5,Beowulf,5.25,{},f,,3',
    expect: { "content-type": "text/csv; charset=utf-8" },
  },
  {
    name: "CSV: jsonb and embedded resources as quoted JSON text",
    url: "authors?select=id,meta,books(id)&id=in.(2,3)&books.id=eq.3&order=id",
    headers: { accept: "text/csv" },
    status: 200,
    text:
      'id,meta,books\n2,"{""langs"": [""pl"", ""en""], ""awards"": {""hugo"": 0}, ""country"": ""PL""}",' +
      '"[{""id"": 3}]"\n3,,[]', // an embed is jsonb, as PostgREST builds it (QuerySpec's Content-Length: 141)
  },
  {
    name: "CSV: no rows is a line feed",
    url: "books?id=eq.99",
    headers: { accept: "text/csv" },
    status: 200,
    text: "\n",
  },
  {
    name: "CSV of a function's value: one column, pgrst_scalar",
    url: "rpc/upto?n=2",
    headers: { accept: "text/csv" },
    status: 200,
    text: "pgrst_scalar\n1\n2",
  },
  {
    name: "CSV of a function's rows",
    url: "rpc/squares?n=2",
    headers: { accept: "text/csv" },
    status: 200,
    text: "i,sq\n1,1\n2,4",
  },
  // Domain representations: casts to json (reads), from json (writes) and from text (filters).
  {
    name: "a domain read through its cast to json",
    url: "profiles",
    status: 200,
    json: [{ id: JOHN, name: "John Doe" }],
  },
  {
    name: "a cast applies to the domain's representation (PostgREST: the JSON text, quoted)",
    url: "profiles?select=i:id::text",
    status: 200,
    json: [{ i: JSON.stringify(JOHN) }],
  },
  {
    name: "a selected domain column, and a filter value through the cast from text",
    url: `profiles?select=id&id=eq.${encodeURIComponent(JOHN)}`,
    status: 200,
    json: [{ id: JOHN }],
  },
  {
    name: "in() on a domain parses every value",
    url: `profiles?select=name&id=in.(${encodeURIComponent(JOHN)},${encodeURIComponent(JANE)})`,
    status: 200,
    json: [{ name: "John Doe" }],
  },
  {
    name: "an insert writes the domain through its cast from json",
    method: "POST",
    url: "profiles",
    headers: ROLLBACK,
    body: JSON.stringify([{ id: JANE, name: "Jane" }]),
    status: 201,
    json: [{ id: JANE, name: "Jane" }],
  },
  {
    name: "an update writes the domain through its cast from json",
    method: "PATCH",
    url: `profiles?id=eq.${encodeURIComponent(JOHN)}`,
    headers: ROLLBACK,
    body: JSON.stringify({ id: JANE }),
    status: 200,
    json: [{ id: JANE, name: "John Doe" }],
  },
  {
    // PostgREST reads the value from a json_to_record scan: parsed per row updated, never folded at planning.
    name: "an update that matches no row never parses the domain's value",
    method: "PATCH",
    url: `profiles?id=eq.${encodeURIComponent(JANE)}`,
    headers: ROLLBACK,
    body: '{"id": "#", "name": "x"}',
    status: 200,
    json: [],
  },
  {
    name: "an update that matches a row answers the parse's error",
    method: "PATCH",
    url: `profiles?id=eq.${encodeURIComponent(JOHN)}`,
    headers: ROLLBACK,
    body: '{"id": "#", "name": "x"}',
    status: 400,
    json: err("22023", 'invalid symbol "#" found while decoding base64 sequence'),
  },
  // Plans.
  {
    name: "a plan for a media type the engine does not produce → 406 PGRST107",
    url: "books",
    headers: { accept: 'application/vnd.pgrst.plan+json; for="text/html"' },
    status: 406,
    json: err(
      "PGRST107",
      'None of these media types are available: application/vnd.pgrst.plan+json; for="text/html"',
    ),
  },
];

/** A plan in JSON as the body of a 200: the top node's type. */
async function planNode(res: Response, options = ""): Promise<string> {
  const text = await res.text();
  assertEquals(res.status, 200, text);
  assertEquals(res.headers.get("content-type"), PLAN_JSON.replace("; charset", `${options}; charset`));
  assert(text.endsWith("\n"), "a plan ends with a line feed");
  return (JSON.parse(text) as { Plan: { "Node Type": string } }[])[0]!.Plan["Node Type"];
}

Deno.test("data API media types: bodies, CSV, plans and function results as PostgREST", async (t) => {
  const p = await startPlatform({ DATA_PLAN: "true" });
  try {
    await ownerSql(p, LIBRARY_SQL + SQL);
    await ownerSql(p, "insert into counters (name, value) values ('a', 1)");
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
    const get = (url: string, accept: string, init: RequestInit = {}) =>
      p.fetch(`/rest/v1/${url}`, {
        ...init,
        headers: { apikey: p.secretKey, accept, ...init.headers as Record<string, string> },
      });

    await t.step("a read's plan in JSON and in text, with options", async () => {
      assertEquals(
        await planNode(await get("books?id=eq.1", "application/vnd.pgrst.plan+json")),
        "Aggregate",
      );
      const text = await get(
        "books?id=eq.1",
        'application/vnd.pgrst.plan+text; for="text/csv"; options=verbose',
      );
      const body = await text.text();
      assertEquals(text.status, 200, body);
      assertEquals(
        text.headers.get("content-type"),
        'application/vnd.pgrst.plan+text; for="text/csv"; options=verbose; charset=utf-8',
      );
      assert(body.startsWith("Aggregate") && body.includes("Output:"), body);
    });

    await t.step("analyze runs a write and rolls it back", async () => {
      const res = await get("books", "application/vnd.pgrst.plan+json; options=analyze|buffers", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"id":20,"title":"Planned"}',
      });
      assertEquals(await planNode(res, "; options=analyze|buffers"), "Aggregate");
      const call = await get("rpc/add_book", "application/vnd.pgrst.plan+json; options=analyze", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"id":21,"title":"Called"}',
      });
      assertEquals(await planNode(call, "; options=analyze"), "Aggregate");
      assertEquals(await ownerSql(p, "select count(*)::int as n from books where id in (20, 21)"), [{
        n: 0,
      }]);
    });

    await t.step("fuzz: CSV bodies to a table and a function answer 2xx or 4xx, never 5xx", async () => {
      // A fixed seed: the same 60 bodies every run, from the characters CSV gives meaning to and the columns.
      let seed = 7;
      const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      const parts = ['"', ",", "\n", "\r\n", "NULL", "name", "value", "a", "b", "1", "x", "é", " "];
      for (let i = 0; i < 60; i++) {
        let body = "";
        const length = Math.floor(next() * 16);
        for (let j = 0; j < length; j++) body += parts[Math.floor(next() * parts.length)];
        for (const url of ["counters", "rpc/add_them"]) {
          const res = await p.fetch(`/rest/v1/${url}`, {
            method: "POST",
            headers: { apikey: p.secretKey, "content-type": "text/csv", prefer: "tx=rollback" },
            body,
          });
          const text = await res.text();
          assert(res.status < 500, `${url} ${JSON.stringify(body)} → ${res.status} ${text}`);
        }
      }
    });

    await t.step("postgrest-js: explain(), csv(), returns(), rpc() shapes", async () => {
      const db = restClient(p, p.secretKey);
      const plan = await db.from("books").select("id").eq("id", 1).explain({ format: "json", analyze: true });
      assertEquals(plan.error, null);
      assertEquals(
        (plan.data as unknown as { Plan: { "Node Type": string } }[])[0]!.Plan["Node Type"],
        "Aggregate",
      );
      const textPlan = await db.from("books").select("id").explain();
      assertEquals(textPlan.error, null);
      assert(String(textPlan.data).startsWith("Aggregate"), String(textPlan.data));
      const csv = await db.from("books").select("id,in_print").lt("id", 3).order("id").csv();
      assertEquals([csv.error, csv.data], [null, "id,in_print\n1,t\n2,t"]);
      const typed = await db.rpc("squares", { n: 1 }).returns<{ i: number; sq: number }[]>();
      assertEquals(typed.data, [{ i: 1, sq: 1 }]);
      assertEquals((await db.rpc("doubled", { a: 5 }, { get: true })).data, { twice: 10 });
      assertEquals((await db.rpc("both_ways", { a: 1 })).data, { n: 1, t: "1" });
      assertEquals((await db.rpc("upto", { n: 2 })).data, [1, 2]);
      // A variadic parameter's array literal is one element (PostgREST v14), an array one is a POST's.
      assertEquals((await db.rpc("sum_all", { v: [1, 2] }, { get: true })).error?.code, "22P02");
      assertEquals((await db.rpc("sum_all", { v: [1, 2] })).data, 3);
      const none = await db.rpc("nothing");
      assertEquals([none.error, none.status], [null, 204]);
      const single = await db.rpc("upto", { n: 1 }).single();
      assertEquals(single.data, 1);
      const other = await db.schema("public").rpc("with_default", { a: 2 });
      assertEquals(other.data, 12);
    });
  } finally {
    await p.close();
  }
});
