import { join } from "node:path";
import { assert, assertEquals } from "../tests/assert.ts";
import { makeSandbox, openSandboxDatabases, serverUrl } from "../tests/harness.ts";
import { Databases } from "./databases.ts";

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

Deno.test({
  name:
    "project databases: the first project, made beside a new control database, is waited for when asked first",
  ignore: Boolean(serverUrl), // PGlite only: PostgreSQL makes its databases with CREATE DATABASE
  fn: async () => {
    const sandbox = await makeSandbox();
    // Templates of its own, with a control database's only: the control database is a copy, while the first
    // project's directory takes a child's seconds to make, so it is still being made when the open returns.
    const templates = await Deno.makeTempDir({ prefix: "platform-template-" });
    const other = await Deno.makeTempDir({ prefix: "platform-test-" });
    await (await Databases.open({ dataDir: other, poolSize: 2, ownerSecret: "test-owner-secret", templates }))
      .close();
    await Deno.remove(other, { recursive: true });
    const dbs = await Databases.open({
      dataDir: sandbox.env.DATA_DIR!,
      poolSize: 2,
      ownerSecret: "test-owner-secret",
      firstProject: "first",
      templates,
    });
    try {
      // Asked before its creation (ensureDefaultProject's) is: the same database, made whole first.
      const [db] = await Promise.all([dbs.project("first"), dbs.createProject("first")]);
      assertEquals(await db.query("select count(*)::int as n from auth.users"), [{ n: 0 }]);
      assert(await dbs.project("first") === db, "the same database");
      // The directory made for it, not one the open made on its own (another cluster: another system id).
      const [template] = [...Deno.readDirSync(templates)]
        .filter((e) => e.isDirectory && e.name.startsWith("project-")).map((e) => e.name);
      const control = await Deno.readFile(join(templates, template!, "global", "pg_control"));
      const made = new DataView(control.buffer).getBigUint64(0, true).toString();
      const [row] = await db.query<{ id: string }>(
        "select system_identifier::text as id from pg_control_system()",
      );
      assertEquals(row?.id, made);
    } finally {
      await dbs.close();
      await sandbox.destroy();
      await Deno.remove(templates, { recursive: true });
    }
  },
});
