// Exposed schemas (DATA_SCHEMAS, PostgREST's db-schemas): Accept-Profile / Content-Profile select one, row by
// row as PostgREST (v12–v14) answers; postgrest-js's `.schema()`; a bounded fuzz of profile values.
import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql, restClient } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const EXPOSED = "public, api, hidden";

// `api` is usable by the API roles; `hidden` is exposed but granted nothing: exposing grants nothing.
const SQL = `
create schema api;
grant usage on schema api to anon, authenticated, service_role;
create table api.items (id int primary key, name text not null);
grant select, insert, update, delete on api.items to anon, authenticated, service_role;
insert into api.items values (1, 'one'), (2, 'two');
create function api.double_it(n int) returns int language sql immutable as $$ select n * 2 $$;
create function api.all_items() returns setof api.items language sql stable as $$ select * from api.items $$;
grant execute on function api.double_it(int), api.all_items() to anon, authenticated, service_role;
-- Names its table without a schema: the request's search path (the schema asked for first) finds it.
create function api.count_items() returns bigint language plpgsql stable as
  $$ begin return (select count(*) from items); end $$;
create function api.path() returns text language sql stable as $$ select current_setting('search_path') $$;
grant execute on function api.count_items(), api.path() to anon, authenticated, service_role;
create schema hidden;
create table hidden.vault (id int primary key);
insert into hidden.vault values (1);
`;

const CASES: WireCase[] = [
  {
    name: "a request's search path is its schema, then public and extensions",
    url: "rpc/path",
    headers: { "accept-profile": "api" },
    status: 200,
    json: '"api", "public", "extensions"',
  },
  {
    name: "a function of the schema finds its tables unqualified",
    url: "rpc/count_items",
    headers: { "accept-profile": "api" },
    status: 200,
    json: 2,
  },
  {
    name: "no profile: the first exposed schema, named in Content-Profile (several are exposed)",
    url: "books?select=id&id=eq.1",
    status: 200,
    json: [{ id: 1 }],
    expect: { "content-profile": "public" },
  },
  {
    name: "Accept-Profile selects the schema of a read",
    url: "items?select=id,name&order=id",
    headers: { "accept-profile": "api" },
    status: 200,
    json: [{ id: 1, name: "one" }, { id: 2, name: "two" }],
    expect: { "content-profile": "api" },
  },
  {
    // Two headers of one name reach a server joined by ", "; PostgREST reads the first.
    name: "Accept-Profile sent twice: the first",
    url: "items?select=id&order=id",
    headers: { "accept-profile": "api, public" },
    status: 200,
    json: [{ id: 1 }, { id: 2 }],
    expect: { "content-profile": "api" },
  },
  {
    name: "HEAD with Accept-Profile",
    method: "HEAD",
    url: "items",
    headers: { "accept-profile": "api" },
    status: 200,
    expect: { "content-profile": "api" },
  },
  {
    name: "a table of another exposed schema → 404 PGRST205 naming the schema",
    url: "books",
    headers: { "accept-profile": "api" },
    status: 404,
    json: err("PGRST205", "Could not find the table 'api.books' in the schema cache"),
  },
  {
    name: "a table of the default schema is not found in another",
    url: "items",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.items' in the schema cache"),
  },
  {
    name: "an unexposed schema → 406 PGRST106 listing the exposed ones",
    url: "items",
    headers: { "accept-profile": "auth" },
    status: 406,
    json: err("PGRST106", "Invalid schema: auth", null, `Only the following schemas are exposed: ${EXPOSED}`),
    expect: { "proxy-status": "PostgREST; error=PGRST106", "content-profile": null },
  },
  {
    name: "profiles are case sensitive",
    url: "items",
    headers: { "accept-profile": "API" },
    status: 406,
    json: err("PGRST106", "Invalid schema: API", null, `Only the following schemas are exposed: ${EXPOSED}`),
  },
  {
    name: "Content-Profile selects the schema of a write",
    method: "POST",
    url: "items",
    headers: { "content-profile": "api", prefer: "return=representation,tx=rollback" },
    body: '{"id": 3, "name": "three"}',
    status: 201,
    json: [{ id: 3, name: "three" }],
    expect: { "content-profile": "api" },
  },
  {
    name: "a write reads Content-Profile, not Accept-Profile",
    method: "POST",
    url: "items",
    headers: { "accept-profile": "api" },
    body: '{"id": 3, "name": "three"}',
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.items' in the schema cache"),
  },
  {
    name: "an unexposed Content-Profile on a write → 406 PGRST106 before the body is read",
    method: "PATCH",
    url: "items?id=eq.1",
    headers: { "content-profile": "platform" },
    body: "not json",
    status: 406,
    json: err(
      "PGRST106",
      "Invalid schema: platform",
      null,
      `Only the following schemas are exposed: ${EXPOSED}`,
    ),
  },
  {
    name: "PATCH and DELETE with Content-Profile",
    method: "DELETE",
    url: "items?id=eq.2",
    headers: { "content-profile": "api", prefer: "return=representation,tx=rollback" },
    status: 200,
    json: [{ id: 2, name: "two" }],
    expect: { "content-profile": "api" },
  },
  {
    name: "RPC POST: Content-Profile",
    method: "POST",
    url: "rpc/double_it",
    headers: { "content-profile": "api" },
    body: '{"n": 21}',
    status: 200,
    json: 42,
    expect: { "content-profile": "api" },
  },
  {
    name: "RPC GET: Accept-Profile, a set filtered",
    url: "rpc/all_items?id=eq.2",
    headers: { "accept-profile": "api" },
    status: 200,
    json: [{ id: 2, name: "two" }],
  },
  {
    name: "RPC of another schema is not found in the default one, named with its schema",
    method: "POST",
    url: "rpc/double_it",
    body: '{"n": 1}',
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.double_it(n) in the schema cache",
      "Searched for the function public.double_it with parameter n or with a single unnamed json/jsonb parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "an exposed schema the role has no USAGE on → 401 42501 for anon: exposing grants nothing",
    url: "vault",
    headers: { "accept-profile": "hidden" },
    anon: true,
    status: 401,
    expect: { "proxy-status": "PostgREST; error=42501" },
  },
  {
    name: "… and 403 for service_role (no superuser behind the API)",
    url: "vault",
    headers: { "accept-profile": "hidden" },
    status: 403,
    expect: { "proxy-status": "PostgREST; error=42501" },
  },
  {
    name: "OPTIONS follows Accept-Profile",
    method: "OPTIONS",
    url: "items",
    headers: { "accept-profile": "api" },
    status: 200,
    expect: { allow: "OPTIONS,GET,HEAD,POST,PUT,PATCH,DELETE" },
  },
];

/** A small deterministic generator, so a failing fuzz case can be replayed. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

Deno.test("data API schemas: DATA_SCHEMAS, Accept-Profile and Content-Profile as PostgREST", async (t) => {
  const p = await startPlatform({ DATA_SCHEMAS: "public,api,hidden" });
  try {
    await ownerSql(p, LIBRARY_SQL + SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));

    await t.step("postgrest-js .schema(): read, insert and rpc round trip", async () => {
      const db = restClient(p, p.secretKey);
      const read = await db.schema("api").from("items").select("id,name").order("id");
      assertEquals([read.error, read.data], [null, [{ id: 1, name: "one" }, { id: 2, name: "two" }]]);
      const inserted = await db.schema("api").from("items").insert({ id: 9, name: "nine" }).select().single();
      assertEquals([inserted.error, inserted.data], [null, { id: 9, name: "nine" }]);
      const updated = await db.schema("api").from("items").update({ name: "NINE" }).eq("id", 9).select(
        "name",
      );
      assertEquals([updated.error, updated.data], [null, [{ name: "NINE" }]]);
      const removed = await db.schema("api").from("items").delete().eq("id", 9);
      assertEquals([removed.error, removed.status], [null, 204]);
      const called = await db.schema("api").rpc("double_it", { n: 4 });
      assertEquals([called.error, called.data], [null, 8]);
      const got = await db.schema("api").rpc("all_items", {}, { get: true }).eq("id", 1);
      assertEquals([got.error, got.data], [null, [{ id: 1, name: "one" }]]);
      const refused = await db.schema("auth").from("users").select();
      assertEquals([refused.status, refused.error?.code], [406, "PGRST106"]);
      const plain = await db.from("books").select("id").eq("id", 1);
      assertEquals([plain.error, plain.data], [null, [{ id: 1 }]]);
    });

    await t.step(
      "bounded fuzz: Accept-Profile / Content-Profile values are 4xx or served, never 5xx",
      async () => {
        const next = rng(26);
        const pieces = [
          "public",
          "api",
          "hidden",
          "auth",
          "pg_catalog",
          "",
          " ",
          ",",
          '"',
          "'",
          ";",
          "%00",
          "\\",
          "é",
          "api,public",
          "PUBLIC",
          "a".repeat(300),
          "../",
          "$1",
          "--",
          "*",
        ];
        const targets = [
          { method: "GET", url: "items", header: "accept-profile" },
          { method: "POST", url: "items?tx=1", header: "content-profile", body: '{"id":5,"name":"x"}' },
          { method: "PATCH", url: "items?id=eq.1", header: "content-profile", body: '{"name":"x"}' },
          { method: "DELETE", url: "items?id=eq.1", header: "content-profile" },
          { method: "POST", url: "rpc/double_it", header: "content-profile", body: '{"n":1}' },
          { method: "GET", url: "rpc/double_it?n=1", header: "accept-profile" },
          { method: "OPTIONS", url: "items", header: "accept-profile" },
        ];
        for (let i = 0; i < 120; i++) {
          const n = 1 + Math.floor(next() * 3);
          let value = "";
          for (let k = 0; k < n; k++) value += pieces[Math.floor(next() * pieces.length)];
          const target = targets[Math.floor(next() * targets.length)]!;
          let headers: Headers;
          try {
            headers = new Headers({ apikey: p.secretKey, [target.header]: value, prefer: "tx=rollback" });
          } catch {
            continue; // not a valid header value: no client can send it
          }
          if (target.body) headers.set("content-type", "application/json");
          const res = await p.fetch(`/rest/v1/${target.url}`, {
            method: target.method,
            headers,
            body: target.body,
          });
          const text = await res.text();
          assert(
            res.status < 500,
            `${target.method} ${target.url} ${target.header}: ${value} → ${res.status} ${text}`,
          );
          const exposed = ["public", "api", "hidden"].includes(value.trim());
          if (!exposed) assertEquals(res.status, 406, `${JSON.stringify(value)} → ${text}`);
        }
      },
    );
  } finally {
    await p.close();
  }
});
