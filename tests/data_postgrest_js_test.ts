import type { PostgrestClient } from "@supabase/postgrest-js";
import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql, restClient } from "./data_fixture.ts";
import { type Json, startPlatform } from "./harness.ts";

// deno-lint-ignore no-explicit-any
type Builder = any;

/** The ids a query returns, asserting it succeeded. */
async function idsOf(query: PromiseLike<{ data: Json; error: Json }>): Promise<number[]> {
  const { data, error } = await query;
  assertEquals(error, null);
  return (data as { id: number }[]).map((r) => r.id);
}

/** One filter through the client: the builder call and the ids it must give (ordered by id). */
const OPERATOR_CASES: { name: string; build: (q: Builder) => Builder; ids: number[] }[] = [
  { name: "eq", build: (q) => q.eq("id", 3), ids: [3] },
  { name: "eq boolean", build: (q) => q.eq("in_print", false), ids: [5] },
  { name: "neq", build: (q) => q.neq("id", 3), ids: [1, 2, 4, 5] },
  { name: "gt", build: (q) => q.gt("price", 10), ids: [1, 4] },
  { name: "gte", build: (q) => q.gte("price", 10), ids: [1, 3, 4] },
  { name: "lt", build: (q) => q.lt("price", 9), ids: [2, 5] },
  { name: "lte", build: (q) => q.lte("price", 8.99), ids: [2, 5] },
  { name: "like", build: (q) => q.like("title", "%The%"), ids: [1, 4] },
  { name: "like with *", build: (q) => q.like("title", "*The*"), ids: [1, 4] },
  { name: "ilike", build: (q) => q.ilike("title", "%wizard%"), ids: [2] },
  { name: "likeAnyOf", build: (q) => q.likeAnyOf("title", ["%Solaris%", "Beo%"]), ids: [3, 5] },
  { name: "likeAllOf", build: (q) => q.likeAllOf("title", ["%The%", "%Cy%"]), ids: [4] },
  { name: "ilikeAnyOf", build: (q) => q.ilikeAnyOf("title", ["%solaris%", "beo%"]), ids: [3, 5] },
  { name: "ilikeAllOf", build: (q) => q.ilikeAllOf("title", ["%the%", "%dis%"]), ids: [1] },
  { name: "regexMatch", build: (q) => q.regexMatch("title", "^S"), ids: [3] },
  { name: "regexIMatch", build: (q) => q.regexIMatch("title", "^s"), ids: [3] },
  { name: "in", build: (q) => q.in("id", [1, 3, 5]), ids: [1, 3, 5] },
  { name: "in with commas and quotes", build: (q) => q.in("title", ["Solaris", "a,b", 'x"y']), ids: [3] },
  { name: "is null", build: (q) => q.is("rating", null), ids: [4] },
  { name: "is true", build: (q) => q.is("in_print", true), ids: [1, 2, 3, 4] },
  { name: "isDistinct", build: (q) => q.isDistinct("rating", 5), ids: [2, 4, 5] },
  { name: "textSearch", build: (q) => q.textSearch("search", "wizard"), ids: [2] },
  {
    name: "textSearch plain",
    build: (q) => q.textSearch("search", "wizard earthsea", { type: "plain", config: "english" }),
    ids: [2],
  },
  {
    name: "textSearch phrase",
    build: (q) => q.textSearch("search", "wizard of earthsea", { type: "phrase" }),
    ids: [2],
  },
  {
    name: "textSearch websearch",
    build: (q) => q.textSearch("search", "cyberiad or solaris", { type: "websearch" }),
    ids: [3, 4],
  },
  { name: "contains array", build: (q) => q.contains("tags", ["scifi", "classic"]), ids: [1] },
  {
    name: "containedBy array",
    build: (q) => q.containedBy("tags", ["scifi", "humor", "fantasy"]),
    ids: [3, 4, 5],
  },
  { name: "overlaps array", build: (q) => q.overlaps("tags", ["humor", "fantasy"]), ids: [2, 4] },
  { name: "rangeLt (sl)", build: (q) => q.rangeLt("pages", "[300,400)"), ids: [2, 3, 4] },
  { name: "rangeGt (sr)", build: (q) => q.rangeGt("pages", "[-10,0)"), ids: [1, 2, 3, 4] },
  { name: "rangeLte (nxr)", build: (q) => q.rangeLte("pages", "[1,210)"), ids: [2, 3] },
  { name: "rangeGte (nxl)", build: (q) => q.rangeGte("pages", "[1,2)"), ids: [1, 2, 3, 4] },
  { name: "rangeAdjacent", build: (q) => q.rangeAdjacent("pages", "[387,400)"), ids: [1] },
  { name: "overlaps range", build: (q) => q.overlaps("pages", "[300,301)"), ids: [1] },
  { name: "not", build: (q) => q.not("id", "in", "(1,2,3)"), ids: [4, 5] },
  { name: "not is null", build: (q) => q.not("published", "is", null), ids: [1, 2, 3] },
  { name: "or", build: (q) => q.or("id.eq.1,rating.is.null"), ids: [1, 4] },
  { name: "or with and", build: (q) => q.or("id.eq.5,and(price.gt.10,rating.eq.5)"), ids: [1, 5] },
  { name: "filter", build: (q) => q.filter("tags", "cs", "{scifi}"), ids: [1, 3, 4] },
  { name: "match", build: (q) => q.match({ author_id: 1, rating: 4 }), ids: [2] },
  { name: "JSON path filter on authors", build: (q) => q.gte("rating", 5).lte("price", 10), ids: [3] },
  // The rest of the filter API: negation of every kind of operator, quoting, quantifiers, languages.
  { name: "not like", build: (q) => q.not("title", "like", "*The*"), ids: [2, 3, 5] },
  {
    name: "not fts with a language",
    build: (q) => q.not("search", "fts(english)", "wizard"),
    ids: [1, 3, 4, 5],
  },
  { name: "not is true", build: (q) => q.not("in_print", "is", true), ids: [5] },
  { name: "not like(any)", build: (q) => q.not("title", "like(any)", "{*Sol*,*Beo*}"), ids: [1, 2, 4] },
  {
    name: "not in with quoted values",
    build: (q) => q.not("title", "in", '("Solaris","a,b")'),
    ids: [1, 2, 4, 5],
  },
  {
    name: "in with values holding dots and parentheses",
    build: (q) => q.in("title", ["The Dispossessed", "x.y(z)", "Beowulf"]),
    ids: [1, 5],
  },
  {
    name: "or with quoted values",
    build: (q) => q.or('title.eq."a,b",title.eq."The Dispossessed"'),
    ids: [1],
  },
  { name: "filter not.in", build: (q) => q.filter("id", "not.in", "(1,2)"), ids: [3, 4, 5] },
  {
    name: "textSearch on a text column with config and type",
    build: (q) => q.textSearch("title", "wizard", { config: "english", type: "websearch" }),
    ids: [2],
  },
  { name: "containedBy range", build: (q) => q.containedBy("pages", "[0,300)"), ids: [2, 3, 4] },
  { name: "match on several columns", build: (q) => q.match({ in_print: true, rating: 5 }), ids: [1, 3] },
];

Deno.test("postgrest-js works unchanged against /rest/v1", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL);
    const db: PostgrestClient = restClient(p, p.secretKey);

    for (const c of OPERATOR_CASES) {
      await t.step(`operator: ${c.name}`, async () => {
        assertEquals(await idsOf(c.build(db.from("books").select("id")).order("id")), c.ids);
      });
    }

    await t.step("JSON paths in select and filter", async () => {
      const { data, error } = await db.from("authors").select("name, country:meta->>country")
        .eq("meta->>country", "PL");
      assertEquals(error, null);
      assertEquals(data, [{ name: "Stanisław Lem", country: "PL" }]);
      const contains = await db.from("authors").select("id").contains("meta", { country: "US" });
      assertEquals(contains.data, [{ id: 1 }]);
    });

    await t.step("ordering: several keys, nulls first and last, referenced tables", async () => {
      assertEquals(
        await idsOf(
          db.from("books").select("id").order("rating", { ascending: false, nullsFirst: false }).order("id"),
        ),
        [1, 3, 2, 5, 4],
      );
      assertEquals(
        await idsOf(db.from("books").select("id").order("rating", { nullsFirst: true }).order("id")),
        [4, 5, 2, 1, 3],
      );
      const { data } = await db.from("authors").select("id, books(id)").eq("id", 1)
        .order("id", { referencedTable: "books", ascending: false });
      assertEquals(data, [{ id: 1, books: [{ id: 2 }, { id: 1 }] }]);
    });

    await t.step("pagination: limit, range, referenced limit", async () => {
      assertEquals(await idsOf(db.from("books").select("id").order("id").limit(2)), [1, 2]);
      assertEquals(await idsOf(db.from("books").select("id").order("id").range(1, 3)), [2, 3, 4]);
      const { data } = await db.from("authors").select("id, books(id)").eq("id", 2)
        .order("id", { referencedTable: "books" }).limit(1, { referencedTable: "books" });
      assertEquals(data, [{ id: 2, books: [{ id: 3 }] }]);
    });

    await t.step("referenced tables: or, range; schema() and returns()", async () => {
      const or = await db.from("authors").select("id, books(id)").eq("id", 1)
        .or("id.eq.2,id.eq.9", { referencedTable: "books" });
      assertEquals(or.data, [{ id: 1, books: [{ id: 2 }] }]);
      const range = await db.from("authors").select("id, books(id)").eq("id", 2)
        .order("id", { referencedTable: "books" }).range(1, 1, { referencedTable: "books" });
      assertEquals(range.data, [{ id: 2, books: [{ id: 4 }] }]);
      assertEquals(await idsOf(db.schema("public").from("books").select("id").eq("id", 3)), [3]);
      const typed = await db.from("books").select("id").eq("id", 1).returns<{ id: number }[]>();
      assertEquals(typed.data, [{ id: 1 }]);
    });

    await t.step("count: exact, planned, estimated, and head", async () => {
      const exact = await db.from("books").select("id", { count: "exact" }).order("id").range(0, 1);
      assertEquals([exact.status, exact.count, exact.data?.length], [206, 5, 2]);
      const head = await db.from("books").select("*", { count: "exact", head: true }).contains("tags", [
        "scifi",
      ]);
      assertEquals([head.status, head.count, head.data], [200, 3, null]);
      for (const count of ["planned", "estimated"] as const) {
        const r = await db.from("books").select("id", { count });
        assertEquals(r.error, null);
        assert(typeof r.count === "number" && r.count >= 0, `${count}: ${r.count}`);
      }
    });

    await t.step("embedding: to-one, to-many, !fk, !inner, nested filters", async () => {
      const toOne = await db.from("books").select("title, authors(name)").eq("id", 3).single();
      assertEquals(toOne.data, { title: "Solaris", authors: { name: "Stanisław Lem" } });
      const toMany = await db.from("authors").select("name, books(title)").eq("id", 2)
        .order("id", { referencedTable: "books" });
      assertEquals(toMany.data, [{
        name: "Stanisław Lem",
        books: [{ title: "Solaris" }, { title: "The Cyberiad" }],
      }]);
      const hinted = await db.from("messages")
        .select("body, sender:authors!messages_sender_fkey(name), receiver:authors!receiver_id(name)")
        .order("id").limit(1);
      assertEquals(hinted.data, [{
        body: "hello",
        sender: { name: "Ursula Le Guin" },
        receiver: { name: "Stanisław Lem" },
      }]);
      const inner = await db.from("authors").select("name, books!inner(title)").eq("books.title", "Solaris");
      assertEquals(inner.data, [{ name: "Stanisław Lem", books: [{ title: "Solaris" }] }]);
      const nested = await db.from("authors").select("id, books(id)").eq("books.rating", 5).order("id");
      assertEquals(nested.data, [{ id: 1, books: [{ id: 1 }] }, { id: 2, books: [{ id: 3 }] }, {
        id: 3,
        books: [],
      }]);
      const orNested = await db.from("authors").select("id, books(id)").eq("id", 2)
        .or("id.eq.4,rating.eq.1", { referencedTable: "books" });
      assertEquals(orNested.data, [{ id: 2, books: [{ id: 4 }] }]);
      const m2m = await db.from("genres").select("name, books(id)").eq("id", 2);
      assertEquals(m2m.data, [{ name: "fantasy", books: [{ id: 2 }] }]);
      const missing = await db.from("books").select("id, nothing(id)");
      assertEquals([missing.status, missing.error?.code], [400, "PGRST200"]);
    });

    await t.step("stripNulls leaves null fields out", async () => {
      const { data, error } = await db.from("books").select("id, rating, published").in("id", [4, 5]).order(
        "id",
      )
        .stripNulls();
      assertEquals(error, null);
      assertEquals(data, [{ id: 4 }, { id: 5, rating: 3 }]);
    });

    await t.step("csv", async () => {
      const { data, error } = await db.from("books").select("id, title, tags").in("id", [1, 5]).order("id")
        .csv();
      assertEquals(error, null);
      // PostgREST prints each row as PostgreSQL prints a record: quoted text, array literals.
      assertEquals(data, 'id,title,tags\n1,"The Dispossessed","{scifi,classic}"\n5,Beowulf,{}');
    });

    await t.step("single and maybeSingle", async () => {
      const one = await db.from("books").select("id").eq("id", 1).single();
      assertEquals([one.status, one.data], [200, { id: 1 }]);
      const many = await db.from("books").select("id").single();
      assertEquals([many.status, many.error?.code], [406, "PGRST116"]);
      const none = await db.from("books").select("id").eq("id", 99).maybeSingle();
      assertEquals([none.error, none.data], [null, null]);
    });

    await t.step("insert, with select and count", async () => {
      const plain = await db.from("counters").insert({ name: "a", value: 1 });
      assertEquals([plain.status, plain.error, plain.data], [201, null, null]);
      const rows = await db.from("counters").insert([{ name: "b", value: 2 }, { name: "c" }], {
        count: "exact",
      })
        .select("name, value");
      assertEquals(rows.error?.code, "23502"); // missing value is null by default (defaultToNull)
      const defaults = await db.from("counters").insert([{ name: "b", value: 2 }, { name: "c" }], {
        count: "exact",
        defaultToNull: false,
      }).select("name, value, note");
      assertEquals(defaults.error, null);
      assertEquals(defaults.count, 2);
      assertEquals(defaults.data, [{ name: "b", value: 2, note: "fresh" }, {
        name: "c",
        value: 0,
        note: "fresh",
      }]);
      const single = await db.from("counters").insert({ name: "d", value: 4 }).select().single();
      assertEquals(single.data, { name: "d", value: 4, note: "fresh" });
      const dup = await db.from("counters").insert({ name: "a" });
      assertEquals([dup.status, dup.error?.code], [409, "23505"]);
    });

    await t.step("upsert: merge, ignore, onConflict", async () => {
      const merged = await db.from("counters").upsert([{ name: "a", value: 10 }, { name: "e", value: 5 }])
        .select("name, value")
        .order("name");
      assertEquals(merged.data, [{ name: "a", value: 10 }, { name: "e", value: 5 }]);
      assertEquals(merged.status, 201); // "e" was inserted
      // Every row only updated: 200, as PostgREST (v12+) answers a merge that inserted nothing.
      const updated = await db.from("counters").upsert({ name: "a", value: 11 }).select("value");
      assertEquals([updated.status, updated.data], [200, [{ value: 11 }]]);
      const ignored = await db.from("counters").upsert({ name: "a", value: 99 }, { ignoreDuplicates: true })
        .select();
      assertEquals([ignored.status, ignored.data], [201, []]);
      const byEmail = await db.from("authors").upsert({ id: 2, name: "S. Lem", email: "lem@example.com" }, {
        onConflict: "email",
      }).select("id, name");
      assertEquals(byEmail.data, [{ id: 2, name: "S. Lem" }]);
    });

    await t.step("update with filters, count and select", async () => {
      const r = await db.from("counters").update({ value: 7 }, { count: "exact" }).in("name", ["b", "c"])
        .select("name, value")
        .order("name");
      assertEquals([r.status, r.count, r.data], [200, 2, [{ name: "b", value: 7 }, { name: "c", value: 7 }]]);
      const minimal = await db.from("counters").update({ note: "x" }).eq("name", "b");
      assertEquals([minimal.status, minimal.error], [204, null]);
      // As PostgREST: no filter is every row (RLS still applies).
      const unfiltered = await db.from("counters").update({ note: "all" }, { count: "exact" });
      assertEquals([unfiltered.status, unfiltered.error, unfiltered.count], [204, null, 5]);
    });

    await t.step("delete with filters and select", async () => {
      const r = await db.from("counters").delete({ count: "exact" }).eq("name", "e").select("name");
      assertEquals([r.status, r.count, r.data], [200, 1, [{ name: "e" }]]);
      const left = await db.from("counters").select("name, note").order("name");
      assertEquals(left.data?.map((r: Json) => [r.name, r.note]), [["a", "all"], ["b", "all"], ["c", "all"], [
        "d",
        "all",
      ]]);
      const unfiltered = await db.from("counters").delete({ count: "exact" });
      assertEquals([unfiltered.status, unfiltered.error, unfiltered.count], [204, null, 4]);
      assertEquals((await db.from("counters").select("name")).data, []);
    });

    await t.step("errors arrive as PostgREST error objects", async () => {
      const bad = await db.from("books").select("id").eq("id", "abc");
      assertEquals([bad.status, bad.error?.code], [400, "22P02"]);
      assert(typeof bad.error?.message === "string");
      const table = await db.from("nope").select();
      assertEquals([table.status, table.error?.code], [404, "PGRST205"]);
      const column = await db.from("books").select("nope");
      assertEquals([column.status, column.error?.code], [400, "42703"]);
    });
  } finally {
    await p.close();
  }
});
