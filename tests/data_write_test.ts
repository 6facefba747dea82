import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql } from "./data_fixture.ts";
import { type Json, startPlatform, type TestPlatform } from "./harness.ts";

async function call(
  p: TestPlatform,
  method: string,
  path: string,
  options: { json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Json; text: string; headers: Headers }> {
  const res = await p.fetch(path, {
    method,
    headers: { apikey: p.secretKey, ...options.headers },
    json: options.json,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text, headers: res.headers };
}

Deno.test("data API writes: insert, upsert, update, delete on both mounts", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL);
    const counters = async () =>
      await ownerSql(p, "select name, value, note from counters order by name") as Json[];

    await t.step("POST one object answers 201 with the row in the envelope", async () => {
      const r = await call(p, "POST", "/v1/db/counters", { json: { name: "a", value: 1 } });
      assertEquals(r.status, 201);
      assertEquals(r.body, { data: [{ name: "a", value: 1, note: "fresh" }], meta: null });
      assertEquals(r.headers.get("content-range"), "*/*");
    });

    await t.step("POST on /rest/v1 is return=minimal by default: 201, empty body", async () => {
      const r = await call(p, "POST", "/rest/v1/counters", { json: { name: "b", value: 2 } });
      assertEquals([r.status, r.text], [201, ""]);
      assertEquals((await counters()).map((c) => c.name), ["a", "b"]);
    });

    await t.step("bulk POST with return=representation and count", async () => {
      const r = await call(p, "POST", "/rest/v1/counters?select=name", {
        json: [{ name: "c", value: 3 }, { name: "d", value: 4 }],
        headers: { prefer: "return=representation, count=exact" },
      });
      assertEquals(r.status, 201);
      assertEquals(r.body, [{ name: "c" }, { name: "d" }]);
      assertEquals(r.headers.get("content-range"), "*/2");
      assertEquals(r.headers.get("preference-applied"), "return=representation, count=exact");
    });

    await t.step("return=minimal on the envelope mount gives data null", async () => {
      const r = await call(p, "POST", "/v1/db/counters", {
        json: { name: "e" },
        headers: { prefer: "return=minimal" },
      });
      assertEquals([r.status, r.body], [201, { data: null, meta: null }]);
    });

    await t.step("return=headers-only gives a Location", async () => {
      const r = await call(p, "POST", "/rest/v1/counters", {
        json: { name: "f g" },
        headers: { prefer: "return=headers-only" },
      });
      assertEquals(r.status, 201);
      assertEquals(r.headers.get("location"), "/counters?name=eq.f%20g");
    });

    await t.step("columns= keeps only the listed keys; the others take defaults", async () => {
      const r = await call(p, "POST", "/v1/db/counters?columns=name", {
        json: { name: "h", value: 99, note: "ignored" },
      });
      assertEquals(r.body.data, [{ name: "h", value: 0, note: "fresh" }]);
    });

    await t.step(
      "bulk rows with other keys: PGRST102 without columns=; null or default with it",
      async () => {
        for (const prefer of ["", "missing=default"]) {
          const mismatch = await call(p, "POST", "/rest/v1/counters", {
            json: [{ name: "i", value: 1 }, { name: "j" }],
            headers: { prefer },
          });
          assertEquals([mismatch.status, mismatch.body], [400, {
            code: "PGRST102",
            message: "All object keys must match",
            details: null,
            hint: null,
          }]);
        }
        const nulls = await call(p, "POST", "/v1/db/counters?columns=name,value", {
          json: [{ name: "i", value: 1 }, { name: "j" }],
        });
        assertEquals([nulls.status, nulls.body.error.code], [400, "23502"]);
        const defaults = await call(p, "POST", "/v1/db/counters?select=name,value,note&columns=name,value", {
          json: [{ name: "i", value: 1 }, { name: "j" }],
          headers: { prefer: "missing=default" },
        });
        assertEquals(defaults.status, 201);
        assertEquals(defaults.body.data, [
          { name: "i", value: 1, note: "fresh" },
          { name: "j", value: 0, note: "fresh" },
        ]);
      },
    );

    await t.step("duplicate key is 409 23505 and nothing changes", async () => {
      const before = await counters();
      const r = await call(p, "POST", "/v1/db/counters", { json: [{ name: "z" }, { name: "a" }] });
      assertEquals([r.status, r.body.error.code, r.body.error.type], [409, "23505", "conflict"]);
      assertEquals(await counters(), before);
    });

    await t.step("upsert merge-duplicates updates, ignore-duplicates keeps", async () => {
      const merged = await call(p, "POST", "/rest/v1/counters", {
        json: [{ name: "a", value: 10 }, { name: "k", value: 11 }],
        headers: { prefer: "resolution=merge-duplicates,return=representation" },
      });
      assertEquals(merged.status, 201);
      assertEquals(merged.body.map((r: Json) => [r.name, r.value]), [["a", 10], ["k", 11]]);
      const ignored = await call(p, "POST", "/rest/v1/counters", {
        json: [{ name: "a", value: 20 }, { name: "l", value: 12 }],
        headers: { prefer: "resolution=ignore-duplicates,return=representation" },
      });
      assertEquals(ignored.body.map((r: Json) => [r.name, r.value]), [["l", 12]]);
      assertEquals((await counters()).find((c) => c.name === "a")!.value, 10);
    });

    await t.step("upsert on_conflict on a unique column", async () => {
      const r = await call(p, "POST", "/v1/db/authors?on_conflict=email&select=id,name", {
        json: { id: 1, name: "U. K. Le Guin", email: "ursula@example.com" },
        headers: { prefer: "resolution=merge-duplicates" },
      });
      assertEquals(r.body.data, [{ id: 1, name: "U. K. Le Guin" }]);
    });

    await t.step("foreign key violation is 409 23503, check violation 400 23514", async () => {
      const fk = await call(p, "POST", "/v1/db/reviews", { json: { book_id: 999, stars: 3 } });
      assertEquals([fk.status, fk.body.error.code], [409, "23503"]);
      const check = await call(p, "POST", "/v1/db/reviews", { json: { book_id: 1, stars: 9 } });
      assertEquals([check.status, check.body.error.code], [400, "23514"]);
    });

    await t.step("insert returning an embedded resource", async () => {
      const r = await call(p, "POST", "/v1/db/reviews?select=stars,books(title)", {
        json: { book_id: 3, stars: 4, comment: "again" },
      });
      assertEquals(r.body.data, [{ stars: 4, books: { title: "Solaris" } }]);
    });

    await t.step("PATCH with a filter updates and returns the rows", async () => {
      const r = await call(p, "PATCH", "/v1/db/counters?name=in.(c,d)&select=name,value&order=name", {
        json: { value: 7 },
        headers: { prefer: "count=exact" },
      });
      assertEquals(r.status, 200);
      assertEquals(r.body.data, [{ name: "c", value: 7 }, { name: "d", value: 7 }]);
      assertEquals(r.headers.get("content-range"), "0-1/2");
    });

    await t.step("PATCH on /rest/v1 is 204 by default", async () => {
      const r = await call(p, "PATCH", "/rest/v1/counters?name=eq.c", { json: { note: "patched" } });
      assertEquals([r.status, r.text], [204, ""]);
      assertEquals((await counters()).find((c) => c.name === "c")!.note, "patched");
    });

    await t.step("PATCH and DELETE without a filter: refused on /v1/db, every row on /rest/v1", async () => {
      const before = await counters();
      for (const [method, json] of [["PATCH", { value: 0 }], ["DELETE", undefined]] as const) {
        const r = await call(p, method, "/v1/db/counters", { json });
        assertEquals([r.status, r.body.error.code], [400, "21000"]);
      }
      assertEquals(await counters(), before);
      const n = before.length;
      const patched = await call(p, "PATCH", "/rest/v1/counters?select=value", {
        json: { value: 0 },
        headers: { prefer: "return=representation, count=exact, tx=rollback" },
      });
      assertEquals(patched.status, 200);
      assertEquals(patched.body, before.map(() => ({ value: 0 })));
      assertEquals(patched.headers.get("content-range"), `0-${n - 1}/${n}`);
      const deleted = await call(p, "DELETE", "/rest/v1/counters", {
        headers: { prefer: "count=exact, tx=rollback" },
      });
      assertEquals([deleted.status, deleted.headers.get("content-range")], [204, `*/${n}`]);
      assertEquals(await counters(), before);
    });

    await t.step("handling=strict with max-affected rolls back a wide change", async () => {
      const before = await counters();
      const r = await call(p, "PATCH", "/rest/v1/counters?value=gte.0", {
        json: { value: 1 },
        headers: { prefer: "handling=strict, max-affected=1" },
      });
      assertEquals([r.status, r.body.code], [400, "PGRST124"]);
      assertEquals(await counters(), before);
    });

    await t.step("tx=rollback answers and changes nothing", async () => {
      const before = await counters();
      const r = await call(p, "DELETE", "/v1/db/counters?name=eq.a", { headers: { prefer: "tx=rollback" } });
      assertEquals(r.status, 200);
      assertEquals(r.body.data.map((c: Json) => c.name), ["a"]);
      assertEquals(await counters(), before);
    });

    await t.step("DELETE returns the deleted rows on /v1/db, 204 on /rest/v1", async () => {
      const r = await call(p, "DELETE", "/v1/db/counters?name=eq.a&select=name");
      assertEquals([r.status, r.body.data], [200, [{ name: "a" }]]);
      const rest = await call(p, "DELETE", "/rest/v1/counters?name=like.*");
      assertEquals(rest.status, 204);
      assertEquals(await counters(), []);
    });

    await t.step("a single object is asked for with Accept: vnd.pgrst.object", async () => {
      const r = await call(p, "POST", "/rest/v1/counters?select=name", {
        json: { name: "solo" },
        headers: { prefer: "return=representation", accept: "application/vnd.pgrst.object+json" },
      });
      assertEquals([r.status, r.body], [201, { name: "solo" }]);
      assert(r.headers.get("content-type")!.startsWith("application/vnd.pgrst.object+json"));
    });
  } finally {
    await p.close();
  }
});
