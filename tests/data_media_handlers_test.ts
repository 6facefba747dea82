// PostgREST's Media Type Handlers (v12–v14, docs "media_type_handlers"), row by row: a domain named after a
// media type returned by a function answers that function with the media type; an aggregate returning one over
// a table's rows answers the table; `*/*` catches every media type; precedence and 406 PGRST107 as PostgREST's
// `negotiateContent` has them. One row is a request and its status, body and headers.
import { assert, assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { err } from "./data_wire_cases.ts";
import { TENANT_CONTENT_CSP } from "../routes/tenant_content.ts";

const SQL = `
create table lines (id int primary key, name text not null);
insert into lines values (1, 'line-1'), (2, 'line-2');
create table plain_items (id int primary key, label text);
insert into plain_items values (1, 'a');
create view "lines.xml" as select * from lines;

create domain "text/csv" as text;
create domain "application/vnd.geo+json" as json;
create domain "application/vnd.twkb" as bytea;
create domain "text/plain" as text;
create domain "*/*" as bytea;

-- Function handlers: the value of a function returning the domain.
create function line_geo(id int) returns "application/vnd.geo+json" language sql stable as $$
  select json_build_object('type', 'Feature', 'id', l.id, 'name', l.name)::"application/vnd.geo+json"
  from lines l where l.id = line_geo.id
$$;
create function line_bytes(id int) returns "application/vnd.twkb" language sql stable as $$
  select ('\\x00ff' || lpad(to_hex(id), 2, '0'))::bytea::"application/vnd.twkb"
$$;
create function hello() returns "text/plain" language sql stable as $$ select 'hello'::"text/plain" $$;
create function raw_any() returns "*/*" language sql stable as $$ select '\\xcafe'::bytea::"*/*" $$;
create function all_lines() returns setof lines language sql stable as $$ select * from lines $$;

-- Overloads: the one called decides (ovi(int) is a text/html handler, ovi(int, int) is not).
create domain "text/html" as text;
create function ovi(x int) returns "text/html" language sql stable as $$ select ('<b>' || x || '</b>')::"text/html" $$;
create function ovi(x int, y int) returns int language sql stable as $$ select x + y $$;

-- A bytea domain three domains deep is still bytes.
create domain deep_1 as bytea;
create domain deep_2 as deep_1;
create domain "application/vnd.deep" as deep_2;
create function deep_bytes() returns "application/vnd.deep" language sql stable as $$
  select '\\xcafe'::bytea::"application/vnd.deep"
$$;

-- A table named "anyelement": its aggregate answers that table only, not every resource.
create table "anyelement" (id int primary key);
insert into "anyelement" values (5);
create domain "application/vnd.anyel" as text;
create function anyel_trans(state text, next public."anyelement") returns "application/vnd.anyel" language sql as $$
  select (state || 'row ' || next.id)::"application/vnd.anyel"
$$;
create aggregate anyel_agg (public."anyelement") (initcond = '', stype = "application/vnd.anyel", sfunc = anyel_trans);

-- An aggregate handler over the table: PostgREST's "override the builtin text/csv" example.
create function lines_csv_trans(state text, next lines) returns "text/csv" language sql as $$
  select (state || next.id::text || ',' || next.name || E'\\n')::"text/csv"
$$;
create function lines_csv_final(data "text/csv") returns "text/csv" language sql as $$
  select set_config('response.headers', '[{"Content-Disposition": "attachment; filename=\\"lines.csv\\""}]', true);
  select (E'id,name\\n' || data)::"text/csv"
$$;
create aggregate lines_csv_agg (lines) (
  initcond = '', stype = "text/csv", sfunc = lines_csv_trans, finalfunc = lines_csv_final
);
create function lines_geo_trans(state jsonb, next lines) returns jsonb language sql as $$
  select state || jsonb_build_array(jsonb_build_object('type', 'Feature', 'id', next.id))
$$;
create function lines_geo_final(state jsonb) returns "application/vnd.geo+json" language sql as $$
  select json_build_object('type', 'FeatureCollection', 'features', state)::"application/vnd.geo+json"
$$;
create aggregate lines_geo_agg (lines) (
  initcond = '[]', stype = jsonb, sfunc = lines_geo_trans, finalfunc = lines_geo_final
);

-- An anyelement handler: text/plain for every resource (a resource's own handler wins over it).
create function any_plain_trans(state text, next anyelement) returns "text/plain" language sql as $$
  select (state || next::text || E'\\n')::"text/plain"
$$;
create aggregate any_plain_agg (anyelement) (initcond = '', stype = "text/plain", sfunc = any_plain_trans);

-- The "any" handler of a view: PostgREST's XML example, its final function choosing the Content-Type.
create function lines_xml_trans(state "*/*", next "lines.xml") returns "*/*" language sql as $$
  select (state || convert_to('<line id="' || next.id || '">' || next.name || '</line>', 'UTF8'))::"*/*"
$$;
create function lines_xml_final(data "*/*") returns "*/*" language plpgsql as $$
declare
  req_accept text := current_setting('request.headers', true)::json->>'accept';
begin
  if req_accept is null or req_accept = '*/*' then
    perform set_config('response.headers', '[{"Content-Type": "text/xml"}]', true);
  elsif req_accept in ('application/xml', 'text/xml') then
    perform set_config('response.headers', json_build_array(json_build_object('Content-Type', req_accept))::text,
      true);
  else
    raise sqlstate 'PT415' using message = 'Unsupported Media Type';
  end if;
  return data;
end $$;
create aggregate lines_xml_agg ("lines.xml") (
  initcond = '', stype = "*/*", sfunc = lines_xml_trans, finalfunc = lines_xml_final
);
`;

const CSV = "text/csv; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
const GEO = "application/vnd.geo+json";
const LINES_CSV = "id,name\n1,line-1\n2,line-2\n";
const LINES_GEO = {
  type: "FeatureCollection",
  features: [{ type: "Feature", id: 1 }, { type: "Feature", id: 2 }],
};
const XML = '<line id="1">line-1</line><line id="2">line-2</line>';

interface HandlerCase {
  name: string;
  method?: string;
  /** Below /rest/v1/. */
  url: string;
  /** `Accept`; absent: none sent. */
  accept?: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  /** The whole body as text, byte for byte. */
  text?: string;
  /** The whole body as JSON. */
  json?: unknown;
  /** The whole body's bytes, in hex. */
  hex?: string;
  /** Header values; null: absent. */
  expect?: Record<string, string | null>;
}

const CASES: HandlerCase[] = [
  // An aggregate handler of the table.
  {
    name: "text/csv: the table's own aggregate overrides the built-in CSV",
    url: "lines",
    accept: "text/csv",
    status: 200,
    text: LINES_CSV,
    expect: {
      "content-type": CSV,
      "content-disposition": 'attachment; filename="lines.csv"',
      "content-range": "0-1/*",
    },
  },
  {
    name: "select=*: still the default select",
    url: "lines?select=*",
    accept: "text/csv",
    status: 200,
    text: LINES_CSV,
  },
  {
    name: "filters, order and limit apply before the aggregate",
    url: "lines?id=gte.1&order=id.desc&limit=1",
    accept: "text/csv",
    status: 200,
    text: "id,name\n2,line-2\n",
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "a select other than * skips the table's handlers: the built-in CSV",
    url: "lines?select=id",
    accept: "text/csv",
    status: 200,
    text: "id\n1\n2",
    expect: { "content-type": CSV, "content-disposition": null },
  },
  {
    name: "a vendor media type of the domain's name: Content-Type as named, no charset",
    url: "lines",
    accept: GEO,
    status: 200,
    json: LINES_GEO,
    expect: { "content-type": GEO },
  },
  {
    name: "no rows: the aggregate over none",
    url: "lines?id=eq.99",
    accept: GEO,
    status: 200,
    json: { type: "FeatureCollection", features: [] },
  },
  {
    name: "application/json is still the built-in JSON",
    url: "lines",
    accept: "application/json",
    status: 200,
    json: [{ id: 1, name: "line-1" }, { id: 2, name: "line-2" }],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "no Accept: */*, the built-in JSON",
    url: "lines",
    status: 200,
    json: [{ id: 1, name: "line-1" }, { id: 2, name: "line-2" }],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "a media type no handler of the table answers: 406 PGRST107",
    url: "lines",
    accept: "application/vnd.twkb",
    status: 406,
    json: err("PGRST107", "None of these media types are available: application/vnd.twkb"),
  },
  {
    name: "the first acceptable of Accept wins",
    url: "lines",
    accept: "application/vnd.twkb, text/csv",
    status: 200,
    text: LINES_CSV,
  },
  {
    name: "ordered by q first",
    url: "lines",
    accept: `text/csv;q=0.5, ${GEO}`,
    status: 200,
    json: LINES_GEO,
  },
  {
    name: "media types are compared as PostgREST decodes them (an unknown one keeps its case)",
    url: "lines",
    accept: "Application/Vnd.Geo+Json",
    status: 406,
    json: err("PGRST107", "None of these media types are available: Application/Vnd.Geo+Json"),
  },
  {
    name: "a vendor type is never a handler's: one object",
    url: "lines?id=eq.1",
    accept: "application/vnd.pgrst.object+json",
    status: 200,
    json: { id: 1, name: "line-1" },
  },
  {
    name: "HEAD: the handler's Content-Type, no body",
    method: "HEAD",
    url: "lines",
    accept: "text/csv",
    status: 200,
    text: "",
    expect: { "content-type": CSV },
  },
  {
    name: "a function returning the table's rows answers with the table's handlers",
    url: "rpc/all_lines",
    accept: "text/csv",
    status: 200,
    text: LINES_CSV,
  },
  {
    name: "a write's representation goes through the handler too",
    method: "POST",
    url: "lines",
    accept: "text/csv",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"id":3,"name":"line-3"}',
    status: 201,
    text: "id,name\n3,line-3\n",
    expect: { "content-type": CSV },
  },
  // Function handlers: the function's value as the domain.
  {
    name: "a function returning the domain answers its value with that Content-Type",
    url: "rpc/line_geo?id=1",
    accept: GEO,
    status: 200,
    json: { type: "Feature", id: 1, name: "line-1" },
    expect: { "content-type": GEO },
  },
  {
    name: "POST alike",
    method: "POST",
    url: "rpc/line_geo",
    accept: GEO,
    body: '{"id":2}',
    status: 200,
    text: '{"type" : "Feature", "id" : 2, "name" : "line-2"}',
  },
  {
    name: "without that Accept: the value as JSON",
    url: "rpc/line_geo?id=1",
    status: 200,
    json: { type: "Feature", id: 1, name: "line-1" },
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "a bytea domain: the bytes themselves",
    url: "rpc/line_bytes?id=7",
    accept: "application/vnd.twkb",
    status: 200,
    hex: "00ff07",
    expect: { "content-type": "application/vnd.twkb" },
  },
  {
    name: "a known media type's domain: Content-Type with charset",
    url: "rpc/hello",
    accept: "text/plain",
    status: 200,
    text: "hello",
    expect: { "content-type": "text/plain; charset=utf-8" },
  },
  {
    name: "a function's own handler wins over an anyelement one",
    url: "rpc/hello",
    accept: "text/plain, text/csv",
    status: 200,
    text: "hello",
  },
  {
    name: "a function returning */*: every media type, application/octet-stream",
    url: "rpc/raw_any",
    status: 200,
    hex: "cafe",
    expect: { "content-type": "application/octet-stream" },
  },
  {
    name: "*/* answers any Accept",
    url: "rpc/raw_any",
    accept: "image/png",
    status: 200,
    hex: "cafe",
    expect: { "content-type": "application/octet-stream" },
  },
  {
    name: "an overload returning the domain: its handler",
    url: "rpc/ovi?x=1",
    accept: "text/html",
    status: 200,
    text: "<b>1</b>",
    expect: { "content-type": "text/html", "content-security-policy": TENANT_CONTENT_CSP },
  },
  {
    name: "another overload of the same name, returning int: no handler answers text/html",
    method: "POST",
    url: "rpc/ovi",
    accept: "text/html",
    body: '{"x":1,"y":2}',
    status: 406,
    json: err("PGRST107", "None of these media types are available: text/html"),
  },
  {
    name: "that overload as JSON",
    method: "POST",
    url: "rpc/ovi",
    body: '{"x":1,"y":2}',
    status: 200,
    json: 3,
  },
  {
    name: "a bytea domain over domains: still the bytes",
    url: "rpc/deep_bytes",
    accept: "application/vnd.deep",
    status: 200,
    hex: "cafe",
    expect: { "content-type": "application/vnd.deep" },
  },
  {
    name: 'a table named "anyelement": its aggregate answers it',
    url: "anyelement",
    accept: "application/vnd.anyel",
    status: 200,
    text: "row 5",
  },
  {
    name: 'a table named "anyelement": its aggregate is not an anyelement handler',
    url: "lines",
    accept: "application/vnd.anyel",
    status: 406,
    json: err("PGRST107", "None of these media types are available: application/vnd.anyel"),
  },
  // anyelement handlers: every resource.
  {
    name: "an anyelement aggregate answers any resource without its own",
    url: "plain_items",
    accept: "text/plain",
    status: 200,
    text: "(1,a)\n",
    expect: { "content-type": "text/plain; charset=utf-8" },
  },
  {
    name: "an anyelement aggregate with another select too",
    url: "plain_items?select=label",
    accept: "text/plain",
    status: 200,
    text: "(a)\n",
  },
  {
    name: "the table's handlers are not another table's",
    url: "plain_items",
    accept: GEO,
    status: 406,
    json: err("PGRST107", `None of these media types are available: ${GEO}`),
  },
  // The any handler of a view.
  {
    name: "*/*: no Accept, the handler (its function sets the Content-Type)",
    url: "lines.xml",
    status: 200,
    text: XML,
    expect: { "content-type": "text/xml" },
  },
  {
    name: "*/*: Accept application/xml",
    url: "lines.xml",
    accept: "application/xml",
    status: 200,
    text: XML,
    expect: { "content-type": "application/xml" },
  },
  {
    name: "*/*: over the built-in JSON too; the function refuses it (PT415)",
    url: "lines.xml",
    accept: "application/json",
    status: 415,
    json: err("PT415", "Unsupported Media Type"),
  },
  {
    name: "*/*: unknown/media reaches the function, which refuses it",
    url: "lines.xml",
    accept: "unknown/media",
    status: 415,
    json: err("PT415", "Unsupported Media Type"),
  },
  {
    name: "*/*: HEAD runs no handler (PostgREST's NoAgg on HEAD): octet-stream, nothing refused",
    method: "HEAD",
    url: "lines.xml",
    accept: "unknown/media",
    status: 200,
    text: "",
    expect: { "content-type": "application/octet-stream" },
  },
  {
    name: "*/*: not over a vendor type",
    url: "lines.xml?id=eq.1",
    accept: "application/vnd.pgrst.object+json",
    status: 200,
    json: { id: 1, name: "line-1" },
  },
  {
    name: "*/*: only with the default select",
    url: "lines.xml?select=id",
    status: 200,
    json: [{ id: 1 }, { id: 2 }],
    expect: { "content-type": JSON_TYPE },
  },
];

const hex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

async function run(p: TestPlatform, c: HandlerCase): Promise<void> {
  const headers: Record<string, string> = { apikey: p.secretKey, ...c.headers };
  if (c.accept !== undefined) headers.accept = c.accept;
  if (c.body !== undefined) headers["content-type"] = "application/json";
  const res = await p.fetch(`/rest/v1/${c.url}`, { method: c.method ?? "GET", headers, body: c.body });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  assertEquals(res.status, c.status, text);
  if (c.text !== undefined) assertEquals(text, c.text);
  if (c.json !== undefined) assertEquals(JSON.parse(text), c.json);
  if (c.hex !== undefined) assertEquals(hex(bytes), c.hex);
  for (const [name, value] of Object.entries(c.expect ?? {})) {
    assertEquals(res.headers.get(name), value, name);
  }
}

Deno.test("data API media type handlers: PostgREST's domains, functions and aggregates", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    for (const c of CASES) await t.step(c.name, () => run(p, c));
    await t.step("the envelope mount (/v1/db) keeps JSON", async () => {
      const res = await p.fetch("/v1/db/lines?select=id", {
        headers: { apikey: p.secretKey, accept: "text/csv" },
      });
      assertEquals([res.status, (await res.json()).data], [200, [{ id: 1 }, { id: 2 }]]);
    });
    await t.step("a plan for a handler's media type (db-plan-enabled): the handler's statement", async () => {
      const set = await p.fetch("/v1/project/data-settings", {
        method: "PATCH",
        headers: { apikey: p.secretKey },
        json: { plan: true },
      });
      assertEquals(set.status, 200);
      await set.body?.cancel();
      const res = await p.fetch("/rest/v1/lines", {
        headers: { apikey: p.secretKey, accept: `application/vnd.pgrst.plan+json; for="${GEO}"` },
      });
      const body = await res.json();
      assertEquals(res.status, 200, JSON.stringify(body));
      assertEquals(
        res.headers.get("content-type"),
        `application/vnd.pgrst.plan+json; for="${GEO}"; charset=utf-8`,
      );
      assertEquals(typeof body[0].Plan, "object");
      await run(p, {
        name: "a plan for a media type nothing answers",
        url: "lines",
        accept: 'application/vnd.pgrst.plan+json; for="application/vnd.twkb"',
        status: 406,
        json: err(
          "PGRST107",
          'None of these media types are available: application/vnd.pgrst.plan+json; for="application/vnd.twkb"',
        ),
      });
    });
    await t.step("an answer a handler typed runs sandboxed in a browser (CSP sandbox)", async () => {
      const res = await p.fetch("/rest/v1/rpc/hello", {
        headers: { apikey: p.secretKey, accept: "text/plain" },
      });
      assertEquals([res.status, await res.text()], [200, "hello"]);
      assertEquals(res.headers.get("content-security-policy")?.split(" ")[0], "sandbox");
    });
    await t.step("fuzz: Accept headers against handlers answer 2xx or 4xx, never 5xx", async () => {
      // A fixed seed: the same 80 headers every run, from the pieces Accept and the handlers give meaning to.
      let seed = 11;
      const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      const parts = [
        "text/csv",
        "*/*",
        GEO,
        "application/vnd.twkb",
        "text/plain",
        "application/json",
        ",",
        ";",
        "q=0.5",
        "q=x",
        'for="text/csv"',
        "application/vnd.pgrst.plan+json",
        "application/vnd.pgrst.object",
        "nulls=stripped",
        " ",
        "/",
        "*",
        "é",
        "\t",
        '"',
        "options=analyze|verbose",
      ];
      for (let i = 0; i < 80; i++) {
        let accept = "";
        const length = 1 + Math.floor(next() * 8);
        for (let j = 0; j < length; j++) accept += parts[Math.floor(next() * parts.length)];
        for (const url of ["lines", "rpc/hello", "rpc/line_geo?id=1", "lines.xml", "plain_items"]) {
          const res = await p.fetch(`/rest/v1/${url}`, { headers: { apikey: p.secretKey, accept } });
          const text = await res.text();
          assert(res.status < 500, `${url} ${JSON.stringify(accept)} → ${res.status} ${text}`);
        }
      }
    });
    await t.step("a handler dropped: the schema cache forgets it (406 again)", async () => {
      await ownerSql(p, "drop aggregate lines_geo_agg (lines)");
      await run(p, {
        name: "dropped",
        url: "lines",
        accept: GEO,
        status: 406,
        json: err("PGRST107", `None of these media types are available: ${GEO}`),
      });
    });
  } finally {
    await p.close();
  }
});
