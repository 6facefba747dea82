import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, serverUrl, startPlatform, type TestPlatform } from "./harness.ts";

// A project database that closes cleanly keeps its schema caches in its rest file; the next process's first
// request takes them from there instead of reading the catalog (PGlite only: PostgreSQL's databases never rest).

/** Records the projects whose database opened with a memo (SchemaCaches.opened, which Databases calls). */
function memosTaken(p: TestPlatform): string[] {
  const taken: string[] = [];
  const schemas = p.platform.data.schemas;
  const opened = schemas.opened.bind(schemas);
  schemas.opened = (ref, db, memo) => {
    taken.push(ref);
    opened(ref, db, memo);
  };
  return taken;
}

async function sql(p: TestPlatform, query: string): Promise<void> {
  const res = await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } });
  assertEquals(res.status, 200, await res.text());
}

async function read(p: TestPlatform, path: string): Promise<Json> {
  const res = await json(await p.fetch(path, { headers: { apikey: p.secretKey } }));
  assertEquals(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

Deno.test({
  name:
    "pglite rest memo: a project's first request after a start takes its schema from its rest file; DDL after is seen",
  ignore: Boolean(serverUrl),
  fn: async () => {
    const first = await startPlatform();
    const sandbox = first.sandbox;
    let second: TestPlatform | undefined;
    try {
      // A first start: the new project's database is a copy of the template, whose memo came with it.
      const takenFirst = memosTaken(first);
      await sql(
        first,
        "create table public.things (id int primary key, name text); insert into things values (1, 'a')",
      );
      assertEquals(takenFirst, ["default"]);
      assertEquals(await read(first, "/rest/v1/things?select=id,name"), [{ id: 1, name: "a" }]);
      await first.close({ keepSandbox: true });

      // The clean close kept the catalog as it was then.
      const restFile = join(sandbox.env.DATA_DIR!, "pglite", "projects", "default.rest");
      const memo = JSON.parse(JSON.parse(await Deno.readTextFile(restFile)).memo);
      assertEquals(memo.exposed, ["public"]);
      assert(JSON.parse(memo.catalogs[0]).tables.some((t: { name: string }) => t.name === "things"));

      second = await startPlatform({}, { sandbox });
      const takenSecond = memosTaken(second);
      assertEquals(await read(second, "/rest/v1/things?select=id,name"), [{ id: 1, name: "a" }]);
      assertEquals(takenSecond, ["default"]);
      // What changes after the open is seen as before.
      await sql(second, "alter table public.things add column size int default 3");
      assertEquals(await read(second, "/rest/v1/things?select=id,size"), [{ id: 1, size: 3 }]);
      await sql(second, "create table public.more (id int primary key)");
      assertEquals(await read(second, "/rest/v1/more"), []);
    } finally {
      if (second) await second.close();
      else await first.close().catch(() => sandbox.destroy());
    }
  },
});
