import { assert, assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { waitUntil } from "../../tests/jobs_fixtures.ts";
import type { Db } from "../../db/driver.ts";
import { NO_JIT } from "../../db/rest/schema.ts";
import { SchemaCaches } from "./schema_caches.ts";

/** The data API's introspection, told by its text. */
const INTROSPECTION = "'tables', coalesce(";

/** `db`, counting the introspections run on it, and keeping the pipelines that ran one. */
function counting(db: Db): { db: Db; introspections: () => number; pipelines: string[][] } {
  let count = 0;
  const pipelines: string[][] = [];
  const query: Db["query"] = (sql, params) => {
    if (sql.includes(INTROSPECTION)) count++;
    return db.query(sql, params);
  };
  const pipeline: Db["pipeline"] = (statements, options) => {
    if (statements.some((s) => s.sql.includes(INTROSPECTION))) {
      count++;
      pipelines.push(statements.map((s) => s.sql));
    }
    return db.pipeline(statements, options);
  };
  return { db: { ...db, query, pipeline }, introspections: () => count, pipelines };
}

Deno.test("schema caches: PostgreSQL reads the catalog with JIT off (compiling its plan cost 20 times the query)", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    await dbs.createProject("nojit");
    const project = await dbs.project("nojit");
    await project.exec("create table public.things (id int primary key)");
    const { db, introspections, pipelines } = counting(project);
    const caches = new SchemaCaches(["public"]);
    assert((await caches.get("nojit", db)).tables.has("things"));
    assertEquals(introspections(), 1);
    if (project.kind === "postgres") {
      assertEquals(pipelines.length, 1);
      assertEquals(pipelines[0]![0], NO_JIT);
    } else assertEquals(pipelines, []);
    await caches.close();
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});

Deno.test("schema caches: a memo made as a database closes serves its next open without reading the catalog", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    await dbs.createProject("memo");
    const project = await dbs.project("memo");
    await project.exec("create table public.things (id int primary key, name text not null)");
    // What the closing database's memo says (its requests used the platform's exposed schemas).
    const memo = await new SchemaCaches(["public"]).make("memo", project);

    const caches = new SchemaCaches(["public"]);
    const { db, introspections } = counting(project);
    caches.opened("memo", db, memo);
    const cache = await caches.get("memo", db);
    assertEquals([...cache.tables.keys()], ["things"]);
    assertEquals(cache.tables.get("things")!.primaryKey, ["id"]);
    assertEquals(introspections(), 0);

    // DDL after the open is heard as before: the next request reads the catalog again.
    await project.exec("alter table public.things add column size int");
    await waitUntil("the DDL to be heard", async () => {
      const next = await caches.get("memo", db);
      return next.tables.get("things")!.columns.has("size");
    });
    assertEquals(introspections(), 1);

    // A project that exposes other schemas than the memo's reads its own on its first request.
    await project.exec("create schema api; create table api.items (id int)");
    const other = new SchemaCaches(["public"]);
    const second = counting(project);
    other.opened("memo", second.db, memo);
    const api = await other.get("memo", second.db, "api", ["api", "public"]);
    assertEquals([...api.tables.keys()], ["items"]);
    assertEquals(second.introspections(), 2);

    // A memo that cannot be read, or was made by another version of the introspection, is no memo.
    const third = counting(project);
    const broken = new SchemaCaches(["public"]);
    const other_version = JSON.stringify({ ...JSON.parse(memo), version: "another" });
    for (
      const bad of [
        "",
        "{",
        '{"exposed":["public"],"catalogs":[]}',
        '{"exposed":[],"catalogs":[]}',
        other_version,
      ]
    ) {
      broken.opened("memo", third.db, bad);
    }
    assert((await broken.get("memo", third.db)).tables.has("things"));
    assertEquals(third.introspections(), 1);
    // The databases close after the data API: a project's memo is still made for the schemas it used.
    await other.close();
    assertEquals(JSON.parse(await other.make("memo", project)).exposed, ["api", "public"]);
    assertEquals(JSON.parse(await other.make("unknown", project)).exposed, ["public"]);
    await Promise.all([caches.close(), broken.close()]);
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
