import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql, restClient } from "./data_fixture.ts";
import { type Json, startPlatform, type TestPlatform } from "./harness.ts";

/** Functions over the library schema: every result shape, defaults, overloads, json bodies, RLS, writes. */
const FUNCTIONS_SQL = `
create function add_them(a int, b int) returns int language sql immutable as $$ select a + b $$;
create function greet(name text default 'world') returns text language sql stable as $$ select 'hello ' || name $$;
create function books_rated(min_rating int) returns setof books language sql stable as
  $$ select * from books where rating >= min_rating $$;
create function author_counts() returns table (author_id int, n bigint) language sql stable as
  $$ select author_id, count(*) from books where author_id is not null group by author_id $$;
create function best_book() returns books language sql stable as
  $$ select * from books order by rating desc nulls last, id limit 1 $$;
create function tag_list() returns setof text language sql stable as $$ select unnest(array['b', 'a', 'c']) $$;
create function bump(name text) returns void language sql as
  $$ insert into counters (name, value) values (name, 1)
     on conflict (name) do update set value = counters.value + 1 $$;
create function echo_body(jsonb) returns jsonb language sql immutable as $$ select $1 $$;
create function wrap_doc(doc json) returns json language sql immutable as $$ select json_build_object('got', doc) $$;
create function pick(a int) returns text language sql immutable as $$ select 'one' $$;
create function pick(a int, b int) returns text language sql immutable as $$ select 'two' $$;
create function twin(x int) returns text language sql immutable as $$ select 'int' $$;
create function twin(x text) returns text language sql immutable as $$ select 'text' $$;
create function total(variadic nums int[]) returns int language sql immutable as
  $$ select coalesce(sum(n), 0)::int from unnest(nums) n $$;
create function whoami() returns json language sql stable as
  $$ select json_build_object('role', auth.role(), 'uid', auth.uid()) $$;
create table diary (id serial primary key, owner uuid not null default auth.uid(), entry text not null);
alter table diary enable row level security;
create policy own_diary on diary for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
create function my_entries() returns setof diary language sql stable as $$ select * from diary order by id $$;
`;

async function call(
  p: TestPlatform,
  method: string,
  path: string,
  options: { json?: unknown; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Json; text: string; headers: Headers }> {
  const res = await p.fetch(path, {
    method,
    headers: { apikey: p.secretKey, ...options.headers },
    json: options.json,
    body: options.body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text, headers: res.headers };
}

async function signUp(p: TestPlatform, email: string): Promise<{ id: string; token: string }> {
  const res = await p.fetch("/v1/auth/signup", {
    method: "POST",
    headers: { apikey: p.publicKey },
    json: { email, password: "correct-horse-1" },
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return { id: body.data.user.id, token: body.data.session.access_token };
}

/** One raw call against both mounts: the status and the result, unwrapped from the envelope. */
interface Case {
  name: string;
  method: "GET" | "POST";
  path: string;
  json?: unknown;
  headers?: Record<string, string>;
  status: number;
  result: unknown;
  contentRange?: string;
}

const CASES: Case[] = [
  { name: "scalar by POST", method: "POST", path: "add_them", json: { a: 1, b: 2 }, status: 200, result: 3 },
  { name: "scalar by GET", method: "GET", path: "add_them?a=40&b=2", status: 200, result: 42 },
  {
    name: "default argument left out",
    method: "POST",
    path: "greet",
    json: {},
    status: 200,
    result: "hello world",
  },
  { name: "default argument given", method: "GET", path: "greet?name=ann", status: 200, result: "hello ann" },
  {
    name: "set of rows, filtered, ordered, shaped",
    method: "POST",
    path: "books_rated?select=id,title&order=id.desc&id=lt.5",
    json: { min_rating: 4 },
    status: 200,
    result: [{ id: 3, title: "Solaris" }, { id: 2, title: "A Wizard of Earthsea" }, {
      id: 1,
      title: "The Dispossessed",
    }],
    contentRange: "0-2/*",
  },
  {
    name: "set of rows by GET: arguments and filters side by side",
    method: "GET",
    path: "books_rated?min_rating=5&select=title&title=like.*o*&order=id",
    status: 200,
    result: [{ title: "The Dispossessed" }, { title: "Solaris" }],
  },
  {
    name: "rows of a table embed through its foreign keys",
    method: "GET",
    path: "books_rated?min_rating=5&select=title,authors(name)&order=id&limit=1",
    status: 200,
    result: [{ title: "The Dispossessed", authors: { name: "Ursula Le Guin" } }],
  },
  {
    name: "returns table (…)",
    method: "GET",
    path: "author_counts?order=author_id",
    status: 200,
    result: [{ author_id: 1, n: 2 }, { author_id: 2, n: 2 }],
  },
  {
    name: "one composite row is an object",
    method: "POST",
    path: "best_book?select=id,title",
    json: {},
    status: 200,
    result: { id: 1, title: "The Dispossessed" },
  },
  {
    name: "set of scalars, paged",
    method: "GET",
    path: "tag_list?limit=2&offset=1",
    status: 200,
    result: ["a", "c"],
    contentRange: "1-2/*",
  },
  {
    name: "count=exact on a set answers 206 for a part",
    method: "GET",
    path: "books_rated?min_rating=1&select=id&order=id&limit=2",
    headers: { prefer: "count=exact" },
    status: 206,
    result: [{ id: 1 }, { id: 2 }],
    contentRange: "0-1/4",
  },
  {
    name: "a single unnamed jsonb parameter takes the body whole",
    method: "POST",
    path: "echo_body",
    json: { any: ["thing", 1] },
    status: 200,
    result: { any: ["thing", 1] },
  },
  {
    name: "Prefer: params=single-object",
    method: "POST",
    path: "wrap_doc",
    json: { x: 1 },
    headers: { prefer: "params=single-object" },
    status: 200,
    result: { got: { x: 1 } },
  },
  {
    name: "overload by argument names (one)",
    method: "POST",
    path: "pick",
    json: { a: 1 },
    status: 200,
    result: "one",
  },
  {
    name: "overload by argument names (two)",
    method: "GET",
    path: "pick?a=1&b=2",
    status: 200,
    result: "two",
  },
  {
    name: "variadic by POST",
    method: "POST",
    path: "total",
    json: { nums: [1, 2, 3] },
    status: 200,
    result: 6,
  },
  {
    name: "variadic by repeated GET keys",
    method: "GET",
    path: "total?nums=4&nums=5",
    status: 200,
    result: 9,
  },
];

Deno.test("data API RPC: /rest/v1/rpc and /v1/db/rpc call functions", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL + FUNCTIONS_SQL);

    for (const c of CASES) {
      await t.step(`${c.name}: both mounts`, async () => {
        const rest = await call(p, c.method, `/rest/v1/rpc/${c.path}`, { json: c.json, headers: c.headers });
        assertEquals([rest.status, rest.body], [c.status, c.result], rest.text);
        const env = await call(p, c.method, `/v1/db/rpc/${c.path}`, { json: c.json, headers: c.headers });
        assertEquals([env.status, env.body], [c.status, { data: c.result, meta: null }], env.text);
        if (c.contentRange) {
          assertEquals(rest.headers.get("content-range"), c.contentRange);
          assertEquals(env.headers.get("content-range"), c.contentRange);
        }
      });
    }

    await t.step("a void function answers 204 and its write stays; tx=rollback undoes it", async () => {
      const r = await call(p, "POST", "/rest/v1/rpc/bump", { json: { name: "calls" } });
      assertEquals([r.status, r.text], [204, ""]);
      const e = await call(p, "POST", "/v1/db/rpc/bump", { json: { name: "calls" } });
      assertEquals([e.status, e.text], [204, ""]);
      const dry = await call(p, "POST", "/v1/db/rpc/bump", {
        json: { name: "calls" },
        headers: { prefer: "tx=rollback" },
      });
      assertEquals([dry.status, dry.headers.get("preference-applied")], [204, "tx=rollback"]);
      assertEquals(await ownerSql(p, "select value from counters where name = 'calls'"), [{ value: 2 }]);
    });

    await t.step("GET runs read only: a function that writes is 405 25006 and writes nothing", async () => {
      const r = await call(p, "GET", "/rest/v1/rpc/bump?name=get");
      assertEquals([r.status, r.body.code], [405, "25006"]);
      const e = await call(p, "GET", "/v1/db/rpc/bump?name=get");
      assertEquals([e.status, e.body.error.code], [405, "25006"]);
      assertEquals(await ownerSql(p, "select count(*)::int as n from counters where name = 'get'"), [{
        n: 0,
      }]);
    });

    await t.step("an unknown function is 404 PGRST202", async () => {
      const r = await call(p, "POST", "/rest/v1/rpc/no_such_fn", { json: { a: 1 } });
      assertEquals(r.status, 404);
      assertEquals(r.body.code, "PGRST202");
      assertEquals(r.body.message, "Could not find the function public.no_such_fn(a) in the schema cache");
      const e = await call(p, "GET", "/v1/db/rpc/no_such_fn");
      assertEquals([e.status, e.body.error.code, e.body.error.type], [404, "PGRST202", "not_found"]);
    });

    await t.step("arguments that no overload takes are PGRST202, with the signature as a hint", async () => {
      const r = await call(p, "POST", "/rest/v1/rpc/add_them", { json: { a: 1, c: 2 } });
      assertEquals([r.status, r.body.code], [404, "PGRST202"]);
      assertEquals(r.body.message, "Could not find the function public.add_them(a, c) in the schema cache");
      assertEquals(r.body.hint, "Perhaps you meant to call the function public.add_them(a, b)");
      const missing = await call(p, "GET", "/rest/v1/rpc/add_them?a=1");
      assertEquals([missing.status, missing.body.code], [404, "PGRST202"]);
    });

    await t.step("overloads that the names cannot tell apart are 300 PGRST203", async () => {
      const r = await call(p, "POST", "/rest/v1/rpc/twin", { json: { x: 1 } });
      assertEquals([r.status, r.body.code], [300, "PGRST203"]);
    });

    await t.step("bad input: wrong type 400, bad body 400, SQL in names 404, PATCH 405", async () => {
      const wrongType = await call(p, "POST", "/rest/v1/rpc/add_them", { json: { a: "x", b: 1 } });
      assertEquals([wrongType.status, wrongType.body.code], [400, "22P02"]);
      const getType = await call(p, "GET", "/v1/db/rpc/add_them?a=1&b=abc");
      assertEquals([getType.status, getType.body.error.code], [400, "22P02"]);
      const notObject = await call(p, "POST", "/rest/v1/rpc/add_them", { json: [1, 2] });
      assertEquals([notObject.status, notObject.body.code], [400, "PGRST102"]);
      const notJson = await call(p, "POST", "/rest/v1/rpc/add_them", {
        body: "{a:",
        headers: { "content-type": "application/json" },
      });
      assertEquals([notJson.status, notJson.body.code], [400, "PGRST102"]);
      const evilName = await call(
        p,
        "POST",
        `/rest/v1/rpc/${encodeURIComponent('add_them"(1,1); drop table books; --')}`,
        {
          json: {},
        },
      );
      assertEquals([evilName.status, evilName.body.code], [404, "PGRST202"]);
      const evilArg = await call(p, "POST", "/rest/v1/rpc/add_them", {
        json: { a: 1, 'b" := 1); drop table books; --': 2 },
      });
      assertEquals([evilArg.status, evilArg.body.code], [404, "PGRST202"]);
      const evilValue = await call(p, "POST", "/rest/v1/rpc/greet", {
        json: { name: "'); drop table books; --" },
      });
      assertEquals([evilValue.status, evilValue.body], [200, "hello '); drop table books; --"]);
      const unknownFilter = await call(p, "GET", "/rest/v1/rpc/books_rated?min_rating=1&nope=eq.1");
      assertEquals([unknownFilter.status, unknownFilter.body.code], [400, "42703"]);
      const patch = await call(p, "PATCH", "/rest/v1/rpc/add_them", { json: {} });
      assertEquals([patch.status, patch.body.code], [405, "PGRST101"]);
      assertEquals(await ownerSql(p, "select count(*)::int as n from books"), [{ n: 5 }]);
    });

    await t.step("an empty POST body calls a function without arguments", async () => {
      const r = await call(p, "POST", "/rest/v1/rpc/greet", { body: "" });
      assertEquals([r.status, r.body], [200, "hello world"]);
    });

    await t.step(
      "the caller's role and claims apply: anon, a user, service_role; RLS on the rows",
      async () => {
        const ann = await signUp(p, "ann@example.com");
        const bob = await signUp(p, "bob@example.com");
        const anon = await call(p, "GET", "/rest/v1/rpc/whoami", { headers: { apikey: p.publicKey } });
        assertEquals(anon.body, { role: "anon", uid: null });
        const user = await call(p, "GET", "/rest/v1/rpc/whoami", {
          headers: { apikey: p.publicKey, authorization: `Bearer ${ann.token}` },
        });
        assertEquals(user.body, { role: "authenticated", uid: ann.id });
        for (const [who, entry] of [[ann, "ann's"], [bob, "bob's"]] as const) {
          const res = await call(p, "POST", "/v1/db/diary", {
            json: { entry },
            headers: { apikey: p.publicKey, authorization: `Bearer ${who.token}` },
          });
          assertEquals(res.status, 201, res.text);
        }
        const mine = await call(p, "GET", "/rest/v1/rpc/my_entries?select=entry", {
          headers: { apikey: p.publicKey, authorization: `Bearer ${bob.token}` },
        });
        assertEquals(mine.body, [{ entry: "bob's" }]);
        const all = await call(p, "GET", "/rest/v1/rpc/my_entries?select=entry");
        assertEquals(all.body, [{ entry: "ann's" }, { entry: "bob's" }]);
      },
    );

    await t.step("a function created later is callable at once, a dropped one is gone", async () => {
      await ownerSql(p, "create function later() returns int language sql as $$ select 7 $$");
      assertEquals((await call(p, "POST", "/rest/v1/rpc/later", { json: {} })).body, 7);
      await ownerSql(p, "drop function later()");
      assertEquals((await call(p, "POST", "/rest/v1/rpc/later", { json: {} })).status, 404);
    });

    await t.step("DDL outside the platform reaches the function cache through NOTIFY", async () => {
      // Straight on the database (not POST /v1/sql), and a new overload of a known name: no forced reload
      // applies, so only the event trigger's NOTIFY can make it callable.
      const db = await p.platform.dbs.project("default");
      await db.exec(
        "create function public.add_them(a int, b int, c int) returns int language sql as $$ select a + b + c $$",
      );
      let r = await call(p, "GET", "/rest/v1/rpc/add_them?a=1&b=2&c=3");
      // Bounded wait (not a timing assertion): NOTIFY crosses connections, slower on a loaded machine.
      for (let i = 0; i < 300 && r.status !== 200; i++) {
        assertEquals(r.body.code, "PGRST202");
        await new Promise((resolve) => setTimeout(resolve, 100));
        r = await call(p, "GET", "/rest/v1/rpc/add_them?a=1&b=2&c=3");
      }
      assertEquals([r.status, r.body], [200, 6]);
      assertEquals((await call(p, "GET", "/rest/v1/rpc/add_them?a=1&b=2")).body, 3);
    });
  } finally {
    await p.close();
  }
});

Deno.test("postgrest-js .rpc() works unchanged against /rest/v1/rpc", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL + FUNCTIONS_SQL);
    const db = restClient(p, p.secretKey);

    await t.step("scalar, with arguments", async () => {
      const { data, error, status } = await db.rpc("add_them", { a: 2, b: 3 });
      assertEquals([data, error, status], [5, null, 200]);
    });

    await t.step("set of rows with select, filters, order, range and count", async () => {
      const { data, error, count, status } = await db.rpc("books_rated", { min_rating: 1 }, {
        count: "exact",
      })
        .select("id,title").gte("id", 2).order("id", { ascending: false }).range(0, 1);
      assertEquals(error, null);
      assertEquals(data, [{ id: 5, title: "Beowulf" }, { id: 3, title: "Solaris" }]);
      assertEquals([count, status], [3, 206]);
    });

    await t.step("get: true sends the arguments in the query", async () => {
      const { data, error } = await db.rpc("greet", { name: "js" }, { get: true });
      assertEquals([data, error], ["hello js", null]);
      // A variadic parameter takes each value of its name as one element (PostgREST v14): postgrest-js's array
      // literal is one element, not an integer.
      const { error: variadic } = await db.rpc("total", { nums: [1, 2, 3, 4] }, { get: true });
      assertEquals([variadic?.code, variadic?.message], [
        "22P02",
        'invalid input syntax for type integer: "{1,2,3,4}"',
      ]);
      const res = await p.fetch("/rest/v1/rpc/total?nums=1&nums=2&nums=3&nums=4", {
        headers: { apikey: p.publicKey },
      });
      assertEquals(await res.json(), 10);
    });

    await t.step("head: true with count answers the count only", async () => {
      const { data, count, error } = await db.rpc("books_rated", { min_rating: 5 }, {
        head: true,
        count: "exact",
      });
      assertEquals([data, count, error], [null, 2, null]);
    });

    await t.step(
      "head: true with an object argument posts with return=minimal, which a call ignores (v14): its result",
      async () => {
        const { data, count, error, status } = await db.rpc("wrap_doc", { doc: { x: 1 } }, {
          head: true,
          count: "exact",
        });
        assertEquals([data, count, error, status], [{ got: { x: 1 } }, 1, null, 200]);
      },
    );

    await t.step(".single() and .maybeSingle() on a set", async () => {
      const one = await db.rpc("books_rated", { min_rating: 5 }).select("title").eq("id", 3).single();
      assertEquals([one.data, one.error], [{ title: "Solaris" }, null]);
      const none = await db.rpc("books_rated", { min_rating: 5 }).select("title").eq("id", 2).maybeSingle();
      assertEquals([none.data, none.error], [null, null]);
      const many = await db.rpc("books_rated", { min_rating: 1 }).single();
      assertEquals([many.status, many.error?.code], [406, "PGRST116"]);
    });

    await t.step("embedding from a function's rows", async () => {
      const { data, error } = await db.rpc("books_rated", { min_rating: 5 }).select("title, authors(name)")
        .order("id");
      assertEquals(error, null);
      assertEquals(data, [
        { title: "The Dispossessed", authors: { name: "Ursula Le Guin" } },
        { title: "Solaris", authors: { name: "Stanisław Lem" } },
      ]);
    });

    await t.step("void, json body, composite row", async () => {
      const bumped = await db.rpc("bump", { name: "js" });
      assertEquals([bumped.data, bumped.error, bumped.status], [null, null, 204]);
      const echoed = await db.rpc("echo_body", { nested: { k: [1, null] } });
      assertEquals(echoed.data, { nested: { k: [1, null] } });
      const best = await db.rpc("best_book").select("title");
      assertEquals(best.data, { title: "The Dispossessed" });
    });

    await t.step("errors come back as PostgREST errors", async () => {
      const missing = await db.rpc("no_such_fn", { a: 1 });
      assertEquals([missing.status, missing.error?.code], [404, "PGRST202"]);
      const wrong = await db.rpc("add_them", { a: "x", b: 1 });
      assertEquals([wrong.status, wrong.error?.code], [400, "22P02"]);
      const anon = restClient(p, p.publicKey);
      const denied = await anon.rpc("my_entries");
      assertEquals([denied.status, denied.error, denied.data], [200, null, []]);
    });

    await t.step("the same call through both mounts gives the same rows", async () => {
      const { data } = await db.rpc("author_counts").order("author_id");
      const env = await (await p.fetch("/v1/db/rpc/author_counts?order=author_id", {
        headers: { apikey: p.secretKey },
      }))
        .json();
      assert(Array.isArray(data) && data.length === 2);
      assertEquals(env.data, data);
    });
  } finally {
    await p.close();
  }
});

Deno.test("a tenant's own SQLSTATE that looks like a socket error (EPIPE) is a SQLSTATE: 400, and the pool goes on", async () => {
  const p = await startPlatform();
  try {
    await ownerSql(
      p,
      `create function raise_epipe() returns setof int language plpgsql as
         $$ begin raise sqlstate 'EPIPE' using message = 'mine'; end $$;
       grant execute on function raise_epipe() to anon;`,
    );
    // More calls than any pool has connections, each in a transaction whose end waits for a check (one object
    // asked for): a code taken for a lost connection would leave each connection reserved, and the pool empty.
    for (let i = 0; i < 30; i++) {
      const res = await p.fetch("/rest/v1/rpc/raise_epipe", {
        method: "POST",
        headers: {
          apikey: p.publicKey,
          "content-type": "application/json",
          accept: "application/vnd.pgrst.object+json",
        },
        body: "{}",
      });
      assertEquals([res.status, (await res.json()).code], [400, "EPIPE"]);
    }
    const ok = await p.fetch("/rest/v1/rpc/add_them?a=1&b=2", { headers: { apikey: p.publicKey } });
    assertEquals(ok.status === 404 || ok.status === 200, true); // the pool still answers
    await ok.body?.cancel();
  } finally {
    await p.close();
  }
});

Deno.test("Prefer: tx=rollback checks deferred constraints also when the end waits for a check (one object)", async () => {
  const p = await startPlatform();
  try {
    await ownerSql(
      p,
      `create table deferrable_unique (col int unique deferrable initially immediate);
       create function insert_twice() returns setof int language plpgsql as $$ begin
         set constraints all deferred;
         insert into deferrable_unique values (1), (1);
         return next 1;
       end $$;`,
    );
    const res = await p.fetch("/rest/v1/rpc/insert_twice", {
      method: "POST",
      headers: {
        apikey: p.secretKey,
        "content-type": "application/json",
        accept: "application/vnd.pgrst.object+json",
        prefer: "tx=rollback",
      },
      body: "{}",
    });
    assertEquals([res.status, (await res.json()).code], [409, "23505"]);
  } finally {
    await p.close();
  }
});
