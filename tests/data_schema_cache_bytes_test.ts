import { SchemaCaches } from "../services/data/schema_caches.ts";
import { assert, assertEquals } from "./assert.ts";
import { startPlatform } from "./harness.ts";

Deno.test("data: schema caches past their byte bound drop the least recently used project's", async () => {
  const p = await startPlatform();
  try {
    const columns = Array.from({ length: 200 }, (_, i) => `"column_${i}" text`).join(", ");
    await p.internalSql(`create table public.wide (id int primary key, ${columns})`);
    const db = await p.platform.dbs.project("default");
    // One project's size, measured by a cache of its own; the same database stands for three projects here.
    const probe = new SchemaCaches(["public"]);
    await probe.all("a", db);
    const one = probe.bytes;
    await probe.close();
    assert(one > 200 * 20, `a wide table is counted (${one} bytes)`);

    const caches = new SchemaCaches(["public"], Math.floor(one * 2.5));
    const a = caches.all("a", db);
    await a;
    const b = caches.all("b", db);
    await b;
    assertEquals(caches.all("a", db), a, "a is used again: b is now the least recently used");
    await caches.all("c", db);
    assertEquals(caches.bytes, 2 * one, "two projects' caches fit, the third pushed one out");
    assertEquals(caches.all("a", db), a, "a was kept");
    const again = caches.all("b", db);
    assert(again !== b, "b was dropped: it is introspected again");
    assertEquals((await again).get("public")!.tables.has("wide"), true);
    assert(caches.bytes <= Math.floor(one * 2.5), `${caches.bytes} bytes held`);
    await caches.close();
  } finally {
    await p.close();
  }
});
