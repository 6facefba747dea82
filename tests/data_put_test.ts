// Writes on /rest/v1 as PostgREST (v12–v14) answers them: PUT (single-row upsert by primary key), the status of
// an upsert, Location, bulk bodies with other keys, unfiltered PATCH/DELETE; and a bounded PUT fuzz.
import { assert, assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create table kv (k text primary key, v int not null default 0, note text default 'fresh');
create table pairs (a int, b int, label text, primary key (a, b));
create table notes (msg text);
create view kv_view as select k, v from kv;
create table tick (id serial primary key, n int default 0);
create view tick_view as select id, n from tick;
create table locked (k text primary key);
revoke all on locked from anon;
insert into kv (k, v) values ('one', 1), ('two', 2);
insert into pairs values (1, 1, 'first');
`;

const PUT_FILTERS = err(
  "PGRST105",
  "Filters must include all and only primary key columns with 'eq' operators",
);
const PUT_MISMATCH = err("PGRST115", "Payload values do not match URL in primary key column(s)");
const PUT_RANGE = err("PGRST114", "limit/offset querystring parameters are not allowed for PUT");
const KEYS = err("PGRST102", "All object keys must match");

/** Cases that change nothing (refused, or rolled back): the table is checked unchanged after them. */
const REFUSED: WireCase[] = [
  {
    name: "PUT without a filter → 405 PGRST105",
    method: "PUT",
    url: "kv",
    body: '{"k":"x"}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT filtering a column that is not the key → 405 PGRST105",
    method: "PUT",
    url: "kv?v=eq.1",
    body: '{"k":"x","v":1}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT with the key and another column → 405 PGRST105",
    method: "PUT",
    url: "kv?k=eq.x&v=eq.1",
    body: '{"k":"x","v":1}',
    status: 405,
    json: PUT_FILTERS,
  },
  ...["neq.x", "not.eq.x", "in.(x)", "eq(any).{x}", "like.x"].map((f): WireCase => ({
    name: `PUT with k=${f} → 405 PGRST105`,
    method: "PUT",
    url: `kv?k=${f}`,
    body: '{"k":"x"}',
    status: 405,
    json: PUT_FILTERS,
  })),
  {
    name: "PUT with and= → 405 PGRST105",
    method: "PUT",
    url: "kv?and=(k.eq.x)",
    body: '{"k":"x"}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT with or= → 405 PGRST105",
    method: "PUT",
    url: "kv?k=eq.x&or=(v.eq.1)",
    body: '{"k":"x"}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT naming part of a composite key → 405 PGRST105",
    method: "PUT",
    url: "pairs?a=eq.1",
    body: '{"a":1,"b":1}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT on a table without a primary key → 405 PGRST105",
    method: "PUT",
    url: "notes?msg=eq.x",
    body: '{"msg":"x"}',
    status: 405,
    json: PUT_FILTERS,
  },
  {
    name: "PUT with limit → 400 PGRST114",
    method: "PUT",
    url: "kv?k=eq.x&limit=1",
    body: '{"k":"x"}',
    status: 400,
    json: PUT_RANGE,
  },
  {
    name: "PUT with offset → 400 PGRST114",
    method: "PUT",
    url: "kv?k=eq.x&offset=2",
    body: '{"k":"x"}',
    status: 400,
    json: PUT_RANGE,
  },
  {
    name: "PUT whose body key is not the filter's → 400 PGRST115",
    method: "PUT",
    url: "kv?k=eq.one",
    body: '{"k":"other","v":9}',
    status: 400,
    json: PUT_MISMATCH,
  },
  {
    name: "PUT whose body lacks the key → 400 PGRST115",
    method: "PUT",
    url: "kv?k=eq.one",
    body: '{"v":9}',
    status: 400,
    json: PUT_MISMATCH,
  },
  ...["[]", "{}", "1", "null", '"one"', '[{"k":"one"},{"k":"one"}]'].map((body): WireCase => ({
    name: `PUT with the body ${body} → 400 PGRST115`,
    method: "PUT",
    url: "kv?k=eq.one",
    body,
    status: 400,
    json: PUT_MISMATCH,
  })),
  {
    name: "PUT with rows of other keys → 400 PGRST102",
    method: "PUT",
    url: "kv?k=eq.one",
    body: '[{"k":"one"},{"k":"one","v":1}]',
    status: 400,
    json: KEYS,
  },
  {
    name: "PUT with an unknown column → 400 PGRST204",
    method: "PUT",
    url: "kv?k=eq.one",
    body: '{"k":"one","nope":1}',
    status: 400,
    json: err("PGRST204", "Could not find the 'nope' column of 'kv' in the schema cache"),
  },
  {
    name: "PUT on an unknown table → 404 PGRST205",
    method: "PUT",
    url: "nope?k=eq.one",
    body: '{"k":"one"}',
    status: 404,
  },
  {
    name: "PUT as anon on a table it may not write → 401 42501",
    method: "PUT",
    url: "locked?k=eq.x",
    body: '{"k":"x"}',
    anon: true,
    status: 401,
  },
  {
    name: "PUT with tx=rollback answers 201 and keeps nothing",
    method: "PUT",
    url: "kv?k=eq.gone",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"k":"gone","v":5}',
    status: 201,
    json: [{ k: "gone", v: 5, note: "fresh" }],
    expect: { "preference-applied": "return=representation, tx=rollback" },
  },
  {
    name: "a bulk insert whose rows have other keys → 400 PGRST102",
    method: "POST",
    url: "kv",
    body: '[{"k":"a"},{"k":"b","v":1}]',
    status: 400,
    json: KEYS,
  },
  {
    name: "missing=default does not lift the rule without columns=",
    method: "POST",
    url: "kv",
    headers: { prefer: "missing=default" },
    body: '[{"k":"a","v":1},{"k":"b"}]',
    status: 400,
    json: KEYS,
  },
  {
    name: "a bulk insert with a row that is not an object → 400 PGRST102",
    method: "POST",
    url: "kv",
    body: '[{"k":"a"},1]',
    status: 400,
    json: KEYS,
  },
  {
    name: "columns= ignores the keys it does not list; a listed key a row lacks is null",
    method: "POST",
    url: "kv?columns=k,note&select=k,v,note",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '[{"k":"a","v":7,"note":"n"},{"k":"b"}]',
    status: 201,
    json: [{ k: "a", v: 0, note: "n" }, { k: "b", v: 0, note: null }],
  },
  {
    name: "columns= with missing=default: a listed key a row lacks takes its default",
    method: "POST",
    url: "kv?columns=k,note&select=k,note",
    headers: { prefer: "return=representation, missing=default, tx=rollback" },
    body: '[{"k":"a","note":"n"},{"k":"b"}]',
    status: 201,
    json: [{ k: "a", note: "n" }, { k: "b", note: "fresh" }],
    expect: { "preference-applied": "missing=default, return=representation, tx=rollback" },
  },
  {
    name: "PATCH with columns= and missing=default sets the missing key to its default",
    method: "PATCH",
    url: "kv?k=eq.one&columns=v,note&select=k,v,note",
    headers: { prefer: "return=representation, missing=default, tx=rollback" },
    body: '{"v":5}',
    status: 200,
    json: [{ k: "one", v: 5, note: "fresh" }],
  },
  {
    name: "PATCH with an array body sets the first object's values",
    method: "PATCH",
    url: "kv?k=eq.one&select=k,v",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '[{"v":7},{"v":8}]',
    status: 200,
    json: [{ k: "one", v: 7 }],
  },
  {
    name: "PATCH with [] or [{}] changes nothing: 204 */*",
    method: "PATCH",
    url: "kv",
    body: "[{}]",
    status: 204,
    expect: { "content-range": "*/*" },
  },
  {
    name: "PATCH with an array whose objects have other keys → 400 PGRST102",
    method: "PATCH",
    url: "kv?k=eq.one",
    body: '[{"v":7},{"note":"x"}]',
    status: 400,
    json: err("PGRST102", "All object keys must match"),
  },
  {
    name: "DELETE without a filter deletes every row (count=exact: */2)",
    method: "DELETE",
    url: "kv",
    headers: { prefer: "count=exact, tx=rollback" },
    status: 204,
    expect: { "content-range": "*/2", "preference-applied": "count=exact, tx=rollback" },
  },
  {
    name: "PATCH without a filter updates every row",
    method: "PATCH",
    url: "kv?select=v&order=k",
    headers: { prefer: "return=representation, count=exact, tx=rollback" },
    body: '{"v":0}',
    status: 200,
    json: [{ v: 0 }, { v: 0 }],
    expect: { "content-range": "0-1/2" },
  },
  {
    name: "an upsert updating every row answers 200 (rolled back)",
    method: "POST",
    url: "kv",
    headers: { prefer: "resolution=merge-duplicates, tx=rollback" },
    body: '[{"k":"one","v":10},{"k":"two","v":20}]',
    status: 200,
    expect: {
      "content-range": "*/*",
      "preference-applied": "resolution=merge-duplicates, tx=rollback",
      location: null,
    },
  },
];

/** Cases run in order; each leaves its change for the next. */
const WRITES: WireCase[] = [
  {
    name: "PUT of a new key inserts: 201 with the row, no Content-Range",
    method: "PUT",
    url: "kv?k=eq.three",
    headers: { prefer: "return=representation" },
    body: '{"k":"three","v":3}',
    status: 201,
    json: [{ k: "three", v: 3, note: "fresh" }],
    expect: { "content-range": null, "preference-applied": "return=representation", location: null },
  },
  {
    name: "PUT of an existing key updates: 200",
    method: "PUT",
    url: "kv?k=eq.three&select=v",
    headers: { prefer: "return=representation" },
    body: '{"k":"three","v":33}',
    status: 200,
    json: [{ v: 33 }],
  },
  {
    name: "PUT without return: 204, no body, no Content-Range (count=exact is listed, not written)",
    method: "PUT",
    url: "kv?k=eq.three",
    headers: { prefer: "count=exact" },
    body: '{"k":"three","v":34}',
    status: 204,
    expect: { "content-range": null, "preference-applied": "count=exact", "content-type": null },
  },
  {
    name: "PUT with return=headers-only (and offset=0, which is no range): 204 without Location",
    method: "PUT",
    url: "kv?k=eq.four&offset=0",
    headers: { prefer: "return=headers-only" },
    body: '{"k":"four"}',
    status: 204,
    expect: { location: null },
  },
  {
    name: "PUT with an array of one row, and a row the filter does not name (ignored, as PostgREST)",
    method: "PUT",
    url: "kv?k=eq.four&select=k,v",
    headers: { prefer: "return=representation" },
    body: '[{"k":"four","v":4},{"k":"ignored","v":0}]',
    status: 200,
    json: [{ k: "four", v: 4 }],
  },
  {
    name: "PUT ignores the Range header",
    method: "PUT",
    url: "kv?k=eq.four&select=v",
    headers: { prefer: "return=representation", range: "1-1" },
    body: '{"k":"four","v":44}',
    status: 200,
    json: [{ v: 44 }],
  },
  {
    name: "PUT on a composite key",
    method: "PUT",
    url: "pairs?b=eq.2&a=eq.1",
    headers: { prefer: "return=representation" },
    body: '{"a":1,"b":2,"label":"second"}',
    status: 201,
    json: [{ a: 1, b: 2, label: "second" }],
  },
  {
    name: "PUT as a single object (Accept: vnd.pgrst.object+json)",
    method: "PUT",
    url: "pairs?a=eq.1&b=eq.1",
    headers: { prefer: "return=representation", accept: "application/vnd.pgrst.object+json" },
    body: '{"a":1,"b":1,"label":"again"}',
    status: 200,
    json: { a: 1, b: 1, label: "again" },
  },
  {
    name: "an upsert inserting some rows answers 201",
    method: "POST",
    url: "kv?select=k,v",
    headers: { prefer: "resolution=merge-duplicates, return=representation, count=exact" },
    body: '[{"k":"one","v":11},{"k":"five","v":5}]',
    status: 201,
    json: [{ k: "one", v: 11 }, { k: "five", v: 5 }],
    expect: {
      "content-range": "*/2",
      "preference-applied": "resolution=merge-duplicates, return=representation, count=exact",
    },
  },
  {
    name: "an upsert only updating answers 200, with return=minimal too",
    method: "POST",
    url: "kv",
    headers: { prefer: "resolution=merge-duplicates, return=minimal" },
    body: '{"k":"five","v":55}',
    status: 200,
    expect: { "content-range": "*/*", "preference-applied": "resolution=merge-duplicates, return=minimal" },
  },
  {
    name: "an upsert of nothing answers 200",
    method: "POST",
    url: "kv",
    headers: { prefer: "resolution=merge-duplicates" },
    body: "[]",
    status: 200,
  },
  {
    name: "ignore-duplicates answers 201 even when every row was there",
    method: "POST",
    url: "kv",
    headers: { prefer: "resolution=ignore-duplicates, return=representation" },
    body: '{"k":"five","v":0}',
    status: 201,
    json: [],
  },
  {
    name: "merge-duplicates on a table without a key is a plain insert (resolution not applied)",
    method: "POST",
    url: "notes",
    headers: { prefer: "resolution=merge-duplicates, return=representation" },
    body: '{"msg":"hi"}',
    status: 201,
    json: [{ msg: "hi" }],
    expect: { "preference-applied": "return=representation" },
  },
  {
    name: "merge-duplicates through a view: 201 when it inserts",
    method: "POST",
    url: "kv_view?on_conflict=k",
    headers: { prefer: "resolution=merge-duplicates, return=representation" },
    body: '[{"k":"six","v":6},{"k":"one","v":12}]',
    status: 201,
    json: [{ k: "six", v: 6 }, { k: "one", v: 12 }],
  },
  {
    name: "merge-duplicates through a view: 200 when it only updates",
    method: "POST",
    url: "kv_view?on_conflict=k",
    headers: { prefer: "resolution=merge-duplicates, return=representation" },
    body: '[{"k":"six","v":66},{"k":"one","v":13}]',
    status: 200,
    json: [{ k: "six", v: 66 }, { k: "one", v: 13 }],
  },
  {
    name: "merge-duplicates through a view with an empty object: 201, a row of defaults",
    method: "POST",
    url: "tick_view?on_conflict=id",
    headers: { prefer: "resolution=merge-duplicates, return=representation" },
    body: "{}",
    status: 201,
    json: [{ id: 1, n: 0 }],
  },
  {
    name: "Location of a single insert with return=headers-only, encoded as PostgREST",
    method: "POST",
    url: "kv",
    headers: { prefer: "return=headers-only" },
    body: '{"k":"a&b c/é"}',
    status: 201,
    expect: { location: "/kv?k=eq.a%26b%20c%2F%C3%A9", "content-range": "*/*" },
  },
  {
    name: "Location of a composite key, in column order",
    method: "POST",
    url: "pairs",
    headers: { prefer: "return=headers-only" },
    body: '{"b":3,"a":2}',
    status: 201,
    expect: { location: "/pairs?a=eq.2&b=eq.3" },
  },
  {
    name: "no Location for several rows",
    method: "POST",
    url: "pairs",
    headers: { prefer: "return=headers-only" },
    body: '[{"a":3,"b":1},{"a":3,"b":2}]',
    status: 201,
    expect: { location: null },
  },
  {
    name: "no Location with return=representation",
    method: "POST",
    url: "pairs",
    headers: { prefer: "return=representation" },
    body: '{"a":4,"b":1}',
    status: 201,
    expect: { location: null },
  },
  {
    name: "no Location without a primary key",
    method: "POST",
    url: "notes",
    headers: { prefer: "return=headers-only" },
    body: '{"msg":"x"}',
    status: 201,
    expect: { location: null },
  },
];

/** The rows of kv and pairs, to tell that a refused request changed nothing. */
async function snapshot(p: TestPlatform): Promise<string> {
  const read = async (path: string) =>
    await (await p.fetch(`/rest/v1/${path}`, { headers: { apikey: p.secretKey } })).text();
  return (await read("kv?order=k")) + (await read("pairs?order=a,b"));
}

/** A small deterministic generator (mulberry32): the fuzz is the same at every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("data API PUT, upsert status, Location and bulk keys as PostgREST", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    const before = await snapshot(p);
    for (const c of REFUSED) await t.step(c.name, () => runWireCase(p, c));
    await t.step("the refused and rolled back requests changed nothing", async () => {
      assertEquals(await snapshot(p), before);
    });
    for (const c of WRITES) await t.step(c.name, () => runWireCase(p, c));

    await t.step("PUT on /v1/db answers in the envelope: 201 inserted, 200 updated", async () => {
      const put = async (v: number) => {
        const res = await p.fetch("/v1/db/kv?k=eq.env", {
          method: "PUT",
          headers: { apikey: p.secretKey },
          json: { k: "env", v },
        });
        return [res.status, await res.json()];
      };
      assertEquals(await put(1), [201, { data: [{ k: "env", v: 1, note: "fresh" }], meta: null }]);
      assertEquals(await put(2), [200, { data: [{ k: "env", v: 2, note: "fresh" }], meta: null }]);
    });

    await t.step("an unfiltered PATCH stays refused on /v1/db", async () => {
      const res = await p.fetch("/v1/db/kv", {
        method: "PATCH",
        headers: { apikey: p.secretKey },
        json: { v: 0 },
      });
      assertEquals([res.status, (await res.json()).error.code], [400, "21000"]);
    });

    await t.step("OPTIONS lists PUT for a table with a primary key only", async () => {
      const allow = async (table: string) =>
        (await p.fetch(`/rest/v1/${table}`, { method: "OPTIONS", headers: { apikey: p.secretKey } }))
          .headers.get("allow");
      assertEquals(await allow("kv"), "OPTIONS,GET,HEAD,POST,PUT,PATCH,DELETE");
      assertEquals(await allow("notes"), "OPTIONS,GET,HEAD,POST,PATCH,DELETE");
    });

    await t.step("fuzz: random PUT filters and bodies never answer 5xx; a 4xx changes nothing", async () => {
      const next = random(20261126);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
      const keys = ["one", "two", "fz", "", "a b", "é", "null", "1"];
      const filters = [
        () => `k=eq.${encodeURIComponent(pick(keys))}`,
        () => `k=${pick(["neq", "gt", "like", "is", "in"])}.${encodeURIComponent(pick(keys))}`,
        () => `v=eq.${Math.floor(next() * 5)}`,
        () => `k=not.eq.one`,
        () => `or=(k.eq.one,k.eq.two)`,
        () => pick(["limit=1", "offset=1", "offset=0", "select=k", "select=nope", "columns=v", "order=v"]),
        () => `nope=eq.1`,
        () => `k=eq.one&k=eq.two`,
      ];
      const values = [1, -1, 2.5, "x", null, true, [], {}, 2 ** 40, "9".repeat(30)];
      const row = () => {
        const r: Record<string, unknown> = {};
        if (next() < 0.8) r.k = pick(keys);
        if (next() < 0.6) r.v = pick(values);
        if (next() < 0.3) r.note = pick(values);
        if (next() < 0.1) r.nope = 1;
        return r;
      };
      const bodies = [
        () => JSON.stringify(row()),
        () => JSON.stringify([row()]),
        () => JSON.stringify([row(), row()]),
        () => JSON.stringify(pick(values)),
        () => "{not json",
        () => "",
      ];
      const prefers = ["", "return=representation", "return=minimal", "count=exact", "tx=rollback"];
      let fourHundreds = 0;
      for (let i = 0; i < 120; i++) {
        const query = Array.from({ length: 1 + Math.floor(next() * 2) }, () => pick(filters)()).join("&");
        const body = pick(bodies)();
        const before = await snapshot(p);
        const res = await p.fetch(`/rest/v1/kv?${query}`, {
          method: "PUT",
          headers: { apikey: p.secretKey, "content-type": "application/json", prefer: pick(prefers) },
          body,
        });
        const text = await res.text();
        assert(res.status < 500, `PUT kv?${query} ${body} → ${res.status} ${text}`);
        if (res.status >= 400) {
          fourHundreds++;
          assertEquals(typeof JSON.parse(text).code, "string");
          assertEquals(await snapshot(p), before, `PUT kv?${query} ${body} changed rows`);
        }
      }
      assert(fourHundreds > 0);
    });
  } finally {
    await p.close();
  }
});
