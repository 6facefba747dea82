// PostgREST's wire format on /rest/v1, row by row: status, body and headers as PostgREST (v12–v14) answers.
import { assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const JSON_TYPE = "application/json; charset=utf-8";
/** A header value as fetch reads it: each byte of the text's UTF-8 as one character. */
const latin1 = (text: string) => String.fromCharCode(...new TextEncoder().encode(text));
/** The headers of every PostgREST error. */
const errorHeaders = (code: string) => ({
  "content-type": JSON_TYPE,
  "proxy-status": `PostgREST; error=${code}`,
});

const SQL = `
create function add_them(a int, b int) returns int language sql immutable as $$ select a + b $$;
create function bump() returns int language sql volatile as $$ select 1 $$;
create function teapot() returns void language plpgsql as $$ begin
  raise sqlstate 'PGRST' using
    message = '{"code":"123","message":"Short and stout","details":"d","hint":"h"}',
    detail = '{"status":418,"headers":{"X-Powered-By":"Nerd"}}';
end $$;
create function bad_raise() returns void language plpgsql as $$ begin
  raise sqlstate 'PGRST' using message = 'not json';
end $$;
create function pay() returns void language plpgsql as $$ begin
  raise sqlstate 'PT402' using message = 'Payment Required';
end $$;
create view book_ids as select id, title from books;
create view book_titles as select title from books;
create view book_count as select count(*) as n from books;
create table موارد (هویت int primary key);
create table secrets (id int primary key);
revoke all on secrets from anon;
`;

const CASES: WireCase[] = [
  // Content negotiation and headers of a read.
  {
    name: "a read: JSON with charset, Content-Location canonical (sorted)",
    url: "books?select=id&id=eq.1",
    status: 200,
    json: [{ id: 1 }],
    expect: {
      "content-type": JSON_TYPE,
      "content-location": "/books?id=eq.1&select=id",
      "content-range": "0-0/*",
      "proxy-status": null,
    },
  },
  {
    name: "Content-Location encodes what is not unreserved and joins repeated keys",
    url: "books?select=id&id=gte.1&id=lte.1&title=not.is.null",
    status: 200,
    expect: { "content-location": "/books?id=gte.1,lte.1&select=id&title=not.is.null" },
  },
  {
    name: "Accept text/html → 406 PGRST107",
    url: "books",
    headers: { accept: "text/html" },
    status: 406,
    json: err("PGRST107", "None of these media types are available: text/html"),
    expect: errorHeaders("PGRST107"),
  },
  {
    name: "406 lists the types by quality",
    url: "books",
    headers: { accept: "application/xml;q=0.5, text/html" },
    status: 406,
    json: err("PGRST107", "None of these media types are available: text/html, application/xml"),
  },
  {
    name: "a browser's Accept ends in */*: JSON",
    url: "books?select=id&id=eq.1",
    headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" },
    status: 200,
    json: [{ id: 1 }],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "application/* is not */*",
    url: "books",
    headers: { accept: "application/*" },
    status: 406,
    json: err("PGRST107", "None of these media types are available: application/*"),
  },
  {
    name: "the plan media type is not enabled",
    url: "books",
    headers: { accept: "application/vnd.pgrst.plan" },
    status: 406,
    json: err(
      "PGRST107",
      'None of these media types are available: application/vnd.pgrst.plan+text; for="application/json"',
    ),
  },
  {
    name: "one object",
    url: "books?select=id&id=eq.1",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 200,
    json: { id: 1 },
    expect: { "content-type": "application/vnd.pgrst.object+json; charset=utf-8" },
  },
  {
    name: "one object asked, five rows → 406 PGRST116",
    url: "books?select=id",
    headers: { accept: "application/vnd.pgrst.object" },
    status: 406,
    json: err("PGRST116", "Cannot coerce the result to a single JSON object", "The result contains 5 rows"),
    expect: errorHeaders("PGRST116"),
  },
  {
    name: "one object asked, no row → 406 PGRST116",
    url: "books?select=id&id=eq.99",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 406,
    json: err("PGRST116", "Cannot coerce the result to a single JSON object", "The result contains 0 rows"),
  },
  {
    name: "nulls=stripped on an array",
    url: "books?select=id,author_id,rating&id=eq.5",
    headers: { accept: "application/vnd.pgrst.array+json;nulls=stripped" },
    status: 200,
    json: [{ id: 5, rating: 3 }],
    expect: { "content-type": "application/vnd.pgrst.array+json;nulls=stripped; charset=utf-8" },
  },
  {
    name: "nulls=stripped on one object",
    url: "books?select=id,author_id&id=eq.5",
    headers: { accept: "application/vnd.pgrst.object+json;nulls=stripped" },
    status: 200,
    json: { id: 5 },
    expect: { "content-type": "application/vnd.pgrst.object+json;nulls=stripped; charset=utf-8" },
  },
  {
    name: "CSV",
    url: "books?select=id,title&id=lt.3&order=id",
    headers: { accept: "text/csv" },
    status: 200,
    expect: { "content-type": "text/csv; charset=utf-8" },
  },
  // Ranges and counts.
  {
    name: "Range with count=exact → 206",
    url: "books?select=id&order=id",
    headers: { range: "0-1", prefer: "count=exact" },
    status: 206,
    json: [{ id: 1 }, { id: 2 }],
    expect: { "content-range": "0-1/5", "preference-applied": "count=exact" },
  },
  {
    name: "Range whose end is before its start → 416 PGRST103",
    url: "books",
    headers: { range: "5-2" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "The lower boundary must be lower than or equal to the upper boundary in the Range header.",
    ),
  },
  {
    name: "offset past the total → 416 PGRST103",
    url: "books?offset=10",
    headers: { prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 10 was requested, but there are only 5 rows.",
    ),
    expect: { "content-range": "*/5" },
  },
  {
    name: "HEAD ignores Range (GET only)",
    method: "HEAD",
    url: "books",
    headers: { range: "0-1" },
    status: 200,
    expect: { "content-range": "0-4/*", "content-type": JSON_TYPE, "content-location": "/books" },
  },
  // Schema cache errors.
  {
    name: "unknown table, a close one → PGRST205 with a hint",
    url: "bookz",
    status: 404,
    json: err(
      "PGRST205",
      "Could not find the table 'public.bookz' in the schema cache",
      null,
      "Perhaps you meant the table 'public.books'",
    ),
    expect: errorHeaders("PGRST205"),
  },
  {
    name: "unknown table, nothing close → no hint",
    url: "qqqqqq",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.qqqqqq' in the schema cache"),
  },
  {
    name: "no relationship → PGRST200 with details and a hint",
    url: "books?select=id,authorz(name)",
    status: 400,
    json: err(
      "PGRST200",
      "Could not find a relationship between 'books' and 'authorz' in the schema cache",
      "Searched for a foreign key relationship between 'books' and 'authorz' in the schema 'public', but no matches were found.",
      "Perhaps you meant 'authors' instead of 'authorz'.",
    ),
  },
  {
    name: "no relationship with a hint → PGRST200 naming it",
    url: "books?select=id,authors!nope(name)",
    status: 400,
    json: err(
      "PGRST200",
      "Could not find a relationship between 'books' and 'authors' in the schema cache",
      "Searched for a foreign key relationship between 'books' and 'authors' using the hint 'nope' in the schema 'public', but no matches were found.",
    ),
  },
  {
    name: "two relationships → 300 PGRST201",
    url: "messages?select=*,authors(*)",
    status: 300,
    json: err(
      "PGRST201",
      "Could not embed because more than one relationship was found for 'messages' and 'authors'",
      // In PostgREST's order: its relationships sorted, two many-to-one by constraint name.
      [
        {
          cardinality: "many-to-one",
          embedding: "messages with authors",
          relationship: "messages_receiver_fkey using messages(receiver_id) and authors(id)",
        },
        {
          cardinality: "many-to-one",
          embedding: "messages with authors",
          relationship: "messages_sender_fkey using messages(sender_id) and authors(id)",
        },
      ],
      "Try changing 'authors' to one of the following: 'authors!messages_receiver_fkey', " +
        "'authors!messages_sender_fkey'. Find the desired relationship in the 'details' key.",
    ),
  },
  {
    name: "a filter on a resource not embedded → PGRST108",
    url: "books?select=id&reviews.stars=eq.5",
    status: 400,
    json: err(
      "PGRST108",
      "'reviews' is not an embedded resource in this request",
      null,
      "Verify that 'reviews' is included in the 'select' query parameter.",
    ),
  },
  {
    name: "a schema not exposed → 406 PGRST106",
    url: "books",
    headers: { "accept-profile": "auth" },
    status: 406,
    json: err("PGRST106", "Invalid schema: auth", null, "Only the following schemas are exposed: public"),
  },
  {
    name: "the one exposed schema chosen by profile is named in Content-Profile",
    url: "books?select=id&id=eq.1",
    headers: { "accept-profile": "public" },
    status: 200,
    expect: { "content-profile": "public" },
  },
  {
    name: "without a profile and one exposed schema: no Content-Profile",
    url: "books?select=id&id=eq.1",
    status: 200,
    expect: { "content-profile": null },
  },
  // Bodies.
  {
    name: "a body of another type → 400 PGRST102",
    method: "POST",
    url: "counters",
    headers: { "content-type": "text/plain" },
    body: "x",
    status: 400,
    json: err("PGRST102", "Content-Type not acceptable: text/plain"),
  },
  {
    name: "invalid JSON → 400 PGRST102",
    method: "POST",
    url: "counters",
    body: "{nope",
    status: 400,
    json: err("PGRST102", "Empty or invalid json"),
  },
  // Preferences.
  {
    name: "Preference-Applied in PostgREST's order",
    method: "POST",
    url: "counters",
    headers: {
      prefer: "tx=rollback, count=exact, return=representation, missing=default, resolution=merge-duplicates",
    },
    body: '{"name":"p"}',
    status: 201,
    json: [{ name: "p", value: 0, note: "fresh" }],
    expect: {
      "preference-applied":
        "resolution=merge-duplicates, missing=default, return=representation, count=exact, tx=rollback",
      "content-range": "*/1",
      "content-type": JSON_TYPE,
    },
  },
  {
    name: "the first of two values wins",
    method: "POST",
    url: "counters",
    headers: { prefer: "return=minimal, return=representation, tx=rollback" },
    body: '{"name":"q"}',
    status: 201,
    expect: { "preference-applied": "return=minimal, tx=rollback", "content-type": null },
  },
  {
    name: "handling=strict with an unknown preference → 400 PGRST122",
    url: "books",
    headers: { prefer: "handling=strict, foo=bar" },
    status: 400,
    json: err("PGRST122", "Invalid preferences given with handling=strict", "Invalid preferences: foo=bar"),
  },
  {
    name: "handling=lenient ignores it",
    url: "books?select=id&id=eq.1",
    headers: { prefer: "handling=lenient, foo=bar" },
    status: 200,
    expect: { "preference-applied": "handling=lenient" },
  },
  {
    name: "max-affected exceeded → 400 PGRST124",
    method: "PATCH",
    url: "books?id=gt.0",
    headers: { prefer: "handling=strict, max-affected=1" },
    body: '{"rating":1}',
    status: 400,
    json: err(
      "PGRST124",
      "Query result exceeds max-affected preference constraint",
      "The query affects 5 rows",
    ),
  },
  {
    name: "DELETE with count=exact: Content-Range */n",
    method: "DELETE",
    url: "reviews?book_id=eq.1",
    headers: { prefer: "count=exact, tx=rollback" },
    status: 204,
    expect: { "content-range": "*/2", "preference-applied": "count=exact, tx=rollback" },
  },
  {
    name: "PATCH with count=exact: Content-Range 0-(n-1)/n",
    method: "PATCH",
    url: "reviews?book_id=eq.1",
    headers: { prefer: "count=exact, tx=rollback" },
    body: '{"comment":"x"}',
    status: 204,
    expect: { "content-range": "0-1/2" },
  },
  {
    name: "PATCH without a filter changes every row, as PostgREST",
    method: "PATCH",
    url: "books",
    headers: { prefer: "count=exact, tx=rollback" },
    body: '{"rating":1}',
    status: 204,
    expect: { "content-range": "0-4/5" },
  },
  {
    name: "Location on a single insert with return=headers-only",
    method: "POST",
    url: "counters",
    headers: { prefer: "return=headers-only, tx=rollback" },
    body: '{"name":"z"}',
    status: 201,
    expect: { location: "/counters?name=eq.z", "content-range": "*/*" },
  },
  {
    // Header values are bytes: a non-Latin-1 table name goes out as its UTF-8, as PostgREST writes it.
    name: "Location of a unicode table: its name's UTF-8 bytes",
    method: "POST",
    url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF",
    headers: { prefer: "return=headers-only, tx=rollback" },
    body: '{"هویت":1}',
    status: 201,
    expect: { location: `/${latin1("موارد")}?%D9%87%D9%88%DB%8C%D8%AA=eq.1` },
  },
  {
    name: "Content-Location of a unicode table",
    url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF",
    status: 200,
    json: [],
    expect: { "content-location": `/${latin1("موارد")}` },
  },
  // OPTIONS.
  {
    name: "OPTIONS on a table",
    method: "OPTIONS",
    url: "books",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD,POST,PUT,PATCH,DELETE" },
  },
  {
    // PostgREST's OptionsSpec: a view showing its table's key has that key, so PUT (was without PUT here).
    name: "OPTIONS on an updatable view with its table's key",
    method: "OPTIONS",
    url: "book_ids",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD,POST,PUT,PATCH,DELETE" },
  },
  {
    name: "OPTIONS on an updatable view without a key: no PUT",
    method: "OPTIONS",
    url: "book_titles",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD,POST,PATCH,DELETE" },
  },
  {
    name: "OPTIONS on a read-only view",
    method: "OPTIONS",
    url: "book_count",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD" },
  },
  {
    name: "OPTIONS on a stable function (with the arguments it requires)",
    method: "OPTIONS",
    url: "rpc/add_them?a=1&b=2",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD,POST" },
  },
  {
    name: "OPTIONS on a volatile function",
    method: "OPTIONS",
    url: "rpc/bump",
    status: 200,
    expect: { allow: "OPTIONS,POST" },
  },
  {
    name: "OPTIONS on the root",
    method: "OPTIONS",
    url: "",
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD" },
  },
  {
    name: "OPTIONS on an unknown table",
    method: "OPTIONS",
    url: "nope",
    status: 404,
    expect: errorHeaders("PGRST205"),
  },
  // Functions.
  {
    name: "PATCH on a function → 405 PGRST101",
    method: "PATCH",
    url: "rpc/add_them",
    body: "{}",
    status: 405,
    json: err("PGRST101", "Cannot use the PATCH method on RPC"),
  },
  {
    name: "an unknown function, a close name → PGRST202",
    url: "rpc/add_themm?a=1&b=2",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.add_themm(a, b) in the schema cache",
      "Searched for the function public.add_themm with parameters a, b, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.add_them",
    ),
  },
  {
    name: "a known function, wrong arguments → PGRST202 with its parameters",
    method: "POST",
    url: "rpc/add_them",
    body: '{"a":1}',
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.add_them(a) in the schema cache",
      "Searched for the function public.add_them with parameter a or with a single unnamed json/jsonb parameter, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.add_them(a, b)",
    ),
  },
  {
    name: "RAISE SQLSTATE 'PGRST' sets code, message, status and headers",
    method: "POST",
    url: "rpc/teapot",
    body: "{}",
    status: 418,
    json: err("123", "Short and stout", "d", "h"),
    expect: { "x-powered-by": "Nerd", "content-type": JSON_TYPE },
  },
  {
    name: "RAISE SQLSTATE 'PGRST' with a message that is not JSON → 500 PGRST121",
    method: "POST",
    url: "rpc/bad_raise",
    body: "{}",
    status: 500,
    json: err(
      "PGRST121",
      `Could not parse JSON in the "RAISE SQLSTATE 'PGRST'" error`,
      "Invalid JSON value for MESSAGE: 'not json'",
      "MESSAGE must be a JSON object with obligatory keys: 'code', 'message' and optional keys: 'details', 'hint'.",
    ),
  },
  {
    name: "SQLSTATE PTxyz → status xyz",
    method: "POST",
    url: "rpc/pay",
    body: "{}",
    status: 402,
    json: err("PT402", "Payment Required"),
  },
  // Status table and auth.
  {
    name: "an undefined function or operator → 404 42883",
    url: "books?id=like.1*",
    status: 404,
  },
  {
    name: "anon denied by a grant → 401 42501 with WWW-Authenticate",
    url: "secrets",
    anon: true,
    status: 401,
    expect: { "www-authenticate": "Bearer", ...errorHeaders("42501") },
  },
  {
    name: "a token that is not a JWT → 401 PGRST301",
    url: "books",
    anon: true,
    headers: { authorization: "Bearer abc" },
    status: 401,
    json: err("PGRST301", "Expected 3 parts in JWT; got 1"),
    expect: {
      "www-authenticate": 'Bearer error="invalid_token", error_description="Expected 3 parts in JWT; got 1"',
    },
  },
  {
    name: "a token that does not verify → 401 PGRST301",
    url: "books",
    anon: true,
    headers: { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" },
    status: 401,
    json: err("PGRST301", "No suitable key or wrong key type", "None of the keys was able to decode the JWT"),
  },
  {
    name: "an empty bearer → 401 PGRST301",
    url: "books",
    anon: true,
    headers: { authorization: "Bearer " },
    status: 401,
    json: err("PGRST301", "Empty JWT is sent in Authorization header"),
  },
];

Deno.test("data API wire format: headers, errors and negotiation as PostgREST", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL + SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
    await t.step("/v1/db keeps the envelope for a bad token", async () => {
      const res = await p.fetch("/v1/db/books", {
        headers: { apikey: p.publicKey, authorization: "Bearer abc" },
      });
      assertEquals([res.status, (await res.json()).error.code], [401, "INVALID_TOKEN"]);
      assertEquals(res.headers.get("proxy-status"), null);
    });
  } finally {
    await p.close();
  }
});
