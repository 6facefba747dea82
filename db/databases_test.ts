import { assert, assertEquals } from "../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../tests/harness.ts";

Deno.test("project databases: a project asked for while it is being created waits for its database", async (t) => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    await t.step(
      "asked for during the creation (a worker that listed the new project): the same database",
      async () => {
        const creating = dbs.createProject("fresh");
        const asked = dbs.project("fresh");
        const [, got] = await Promise.all([creating, asked]);
        assert(got === await dbs.project("fresh"), "the same database");
        assertEquals((await got.query("select count(*)::int as n from auth.users"))[0], { n: 0 });
      },
    );

    await t.step("an open that began before the database existed does not fail the creation", async () => {
      const early = dbs.project("early").then((db) => db, (err: unknown) => err);
      await dbs.createProject("early");
      const created = await dbs.project("early");
      assertEquals((await created.query("select 1 as one"))[0], { one: 1 });
      assert(await dbs.project("early") === created, "the same database");
      const result = await early;
      // PostgreSQL: the database did not exist yet (3D000); PGlite: opening the directory was the creation.
      assert(result === created || (result as { code?: string }).code === "3D000", String(result));
    });

    await t.step("a dropped project can be created again under its ref", async () => {
      await dbs.dropProject("fresh");
      await dbs.createProject("fresh");
      const again = await dbs.project("fresh");
      assert(await dbs.project("fresh") === again, "the same database");
      assertEquals((await again.query("select 1 as one"))[0], { one: 1 });
    });
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
