import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { makeSandbox, openSandboxDatabases, serverUrl } from "../tests/harness.ts";
import { copyTemplate, removeUnfinishedCopies, templateDir, type TemplateRecipe } from "./pglite_template.ts";

/**
 * A recipe whose `make` writes a marked directory (PG_VERSION, as initdb would) and its rest file, counting its
 * runs: the module's own logic (naming, sharing, renames, clean-up) does not depend on what is in the files.
 */
function recipe(kind: string, version: string, make?: (dir: string) => Promise<void>) {
  const runs = { count: 0 };
  const value: TemplateRecipe = {
    kind,
    migrations: [{ name: "0001_x.sql", sql: version }],
    inputs: {},
    make: async (dir, restFile) => {
      runs.count++;
      await make?.(dir);
      await Deno.mkdir(join(dir, "base"), { recursive: true });
      await Deno.writeTextFile(join(dir, "PG_VERSION"), "17\n");
      await Deno.writeTextFile(join(dir, "base", "data"), version);
      if (restFile) await Deno.writeTextFile(restFile, `rest of ${version}`);
    },
  };
  return { recipe: value, runs };
}

async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
}

Deno.test("pglite templates: made once, copied whole, shared, replaced by another version's", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "platform-template-" });
  const templates = join(root, "templates");
  try {
    await t.step("the first copy makes the template; later ones copy it, with its rest file", async () => {
      const { recipe: v1, runs } = recipe("project", "v1");
      await Promise.all([
        copyTemplate(templates, v1, join(root, "a"), join(root, "a.rest")),
        copyTemplate(templates, v1, join(root, "b"), join(root, "b.rest")),
      ]);
      await copyTemplate(templates, v1, join(root, "c"));
      assertEquals(runs.count, 1, "made once, by whichever asked first");
      for (const dir of ["a", "b", "c"]) {
        assertEquals(await Deno.readTextFile(join(root, dir, "base", "data")), "v1");
      }
      assertEquals(await Deno.readTextFile(join(root, "a.rest")), "rest of v1");
      assertEquals(await Deno.readTextFile(join(root, "b.rest")), "rest of v1");
      const template = await templateDir(templates, v1);
      assertEquals(
        await names(templates),
        [template, `${template}.rest`].map((p) => p.slice(templates.length + 1)),
      );
      assertEquals(
        await names(root),
        ["a", "a.rest", "b", "b.rest", "c", "templates"],
        "no copy left beside",
      );
    });

    await t.step("a copy is the template's files, not a link to them", async () => {
      await Deno.writeTextFile(join(root, "a", "base", "data"), "changed");
      const { recipe: v1 } = recipe("project", "v1");
      assertEquals(await Deno.readTextFile(join(await templateDir(templates, v1), "base", "data")), "v1");
      assertEquals(await Deno.readTextFile(join(root, "b", "base", "data")), "v1");
    });

    await t.step("a directory that holds something already is never written over", async () => {
      const { recipe: v1 } = recipe("project", "v1");
      await assertRejects(() => copyTemplate(templates, v1, join(root, "a")));
      assertEquals(await Deno.readTextFile(join(root, "a", "base", "data")), "changed");
      assertEquals(
        await names(root),
        ["a", "a.rest", "b", "b.rest", "c", "templates"],
        "the copy was removed",
      );
    });

    await t.step(
      "another process made the same template meanwhile: its is used, this one's removed",
      async () => {
        const { recipe: v2 } = recipe("control", "v2", async () => {
          // The other process's template appears while this one makes its own.
          const other = await templateDir(templates, v2);
          await Deno.mkdir(join(other, "base"), { recursive: true });
          await Deno.writeTextFile(join(other, "PG_VERSION"), "17\n");
          await Deno.writeTextFile(join(other, "base", "data"), "v2 by the other");
        });
        await copyTemplate(templates, v2, join(root, "d"));
        assertEquals(await Deno.readTextFile(join(root, "d", "base", "data")), "v2 by the other");
        assert(!(await names(templates)).some((name) => name.includes(".tmp-")), "its own attempt is gone");
      },
    );

    await t.step("a failed making leaves nothing, and the next creation tries again", async () => {
      const failing = recipe("project", "v3", () => Promise.reject(new Error("initdb failed")));
      await assertRejects(() => copyTemplate(templates, failing.recipe, join(root, "e")), /initdb failed/);
      assert(!(await names(root)).includes("e"), "no database");
      assert(!(await names(templates)).some((name) => name.includes("v3") || name.includes(".tmp-")));
      const { recipe: v3, runs } = recipe("project", "v3");
      await copyTemplate(templates, v3, join(root, "e"));
      assertEquals(runs.count, 1);
      assertEquals(await Deno.readTextFile(join(root, "e", "base", "data")), "v3");
    });

    await t.step(
      "another version's template of the same kind is removed; other kinds and fresh work stay",
      async () => {
        const { recipe: v1 } = recipe("project", "v1");
        const { recipe: v2 } = recipe("control", "v2");
        const { recipe: v3 } = recipe("project", "v3");
        const left = await names(templates);
        assert(!left.includes((await templateDir(templates, v1)).slice(templates.length + 1)), "v1 removed");
        assert(left.includes((await templateDir(templates, v2)).slice(templates.length + 1)), "control kept");
        assert(left.includes((await templateDir(templates, v3)).slice(templates.length + 1)), "v3 kept");
        // Leftovers of a making that did not finish: kept while they may be another process's work in progress.
        const fresh = join(templates, "project-0000000000000000.tmp-aaaaaaaa");
        const stale = join(templates, "project-0000000000000000.tmp-bbbbbbbb");
        await Deno.mkdir(fresh);
        await Deno.mkdir(stale);
        const hourAgo = new Date(Date.now() - 2 * 60 * 60_000);
        await Deno.utime(stale, hourAgo, hourAgo);
        const { recipe: v4 } = recipe("project", "v4");
        await copyTemplate(templates, v4, join(root, "f"));
        const now = await names(templates);
        assert(now.includes("project-0000000000000000.tmp-aaaaaaaa"), "fresh work in progress kept");
        assert(!now.includes("project-0000000000000000.tmp-bbbbbbbb"), "stale leftover removed");
      },
    );

    await t.step("copies a process left unfinished are removed; nothing else", async () => {
      await Deno.mkdir(join(root, "g.copy-0123abcd"));
      await removeUnfinishedCopies(root);
      assertEquals(await names(root), ["a", "a.rest", "b", "b.rest", "c", "d", "e", "f", "templates"]);
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name:
    "pglite templates: project databases are copies of one migrated template, each its own, resting until used",
  ignore: Boolean(serverUrl), // PostgreSQL makes its databases with CREATE DATABASE
  fn: async () => {
    const sandbox = await makeSandbox();
    const templates = await Deno.makeTempDir({ prefix: "platform-template-" });
    const dbs = await openSandboxDatabases({
      ...sandbox,
      env: { ...sandbox.env, PGLITE_TEMPLATE_DIR: templates },
    });
    try {
      await Promise.all([dbs.createProject("one"), dbs.createProject("two")]);
      const made = await names(templates);
      const project = made.filter((name) => name.startsWith("project-"));
      assertEquals(project.length, 2, `one template and its rest file: ${made}`);
      const [template] = project.filter((name) => !name.endsWith(".rest"));
      // Copies: the same last shutdown as the template's, and both rest until a call opens them.
      const control = await Deno.readFile(join(templates, template!, "global", "pg_control"));
      for (const ref of ["one", "two"]) {
        const dir = join(sandbox.env.DATA_DIR!, "pglite", "projects", ref);
        assertEquals(await Deno.readFile(join(dir, "global", "pg_control")), control);
        assert(dbs.resting(ref), `${ref} rests`);
      }
      const [one, two] = [await dbs.project("one"), await dbs.project("two")];
      await one.exec("create table public.notes (id int); insert into public.notes values (1)");
      assertEquals(await one.query("select count(*)::int as n from public.notes"), [{ n: 1 }]);
      assertEquals(await two.query("select to_regclass('public.notes') as t"), [{ t: null }], "each its own");
      assertEquals(await two.query("select count(*)::int as n from auth.users"), [{ n: 0 }], "migrated");
      const template2 = await Deno.readFile(join(templates, template!, "global", "pg_control"));
      assertEquals(template2, control, "the template itself is never opened");
    } finally {
      await dbs.close();
      await sandbox.destroy();
      await Deno.remove(templates, { recursive: true });
    }
  },
});
