import { PostgrestClient } from "@supabase/postgrest-js";
import { join } from "node:path";
import {
  applyUserMigrations,
  databaseTarget,
  httpTarget,
  readUserMigrations,
} from "../db/user_migrations.ts";
import { assertEquals, assertRejects } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { makeSandbox, spawnPlatform, startPlatform } from "./harness.ts";

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "migrations-" });
  for (const [name, sql] of Object.entries(files)) await Deno.writeTextFile(join(dir, name), sql);
  return dir;
}

Deno.test("user migrations folder", async (t) => {
  const p = await startPlatform();
  const dirs: string[] = [];
  try {
    const db = await p.platform.dbs.project("default");
    // The direct path runs on the project owner's session, as `deno task migrate` does.
    const owner = await p.platform.dbs.ownerSession("default");
    const dir = await folder({
      "0001_todos.sql": "create table todos (id serial primary key, title text not null);",
      "0002_seed.sql": "insert into todos (title) values ('first'), ('second');",
      "README.md": "not a migration",
    });
    dirs.push(dir);

    await t.step("applies new files once, in name order, and the data API sees them", async () => {
      assertEquals(await applyUserMigrations(databaseTarget(owner), await readUserMigrations(dir)), [
        "0001_todos.sql",
        "0002_seed.sql",
      ]);
      // The migration notified the schema cache (NOTIFY platform_schema): poll until the table shows.
      let status = 0;
      // Bounded wait (not a timing assertion): NOTIFY crosses connections, slower on a loaded machine.
      for (let i = 0; i < 300 && status !== 200; i++) {
        const res = await p.fetch("/v1/db/todos?select=title&order=id", { headers: { apikey: p.secretKey } });
        status = res.status;
        if (status === 200) assertEquals((await res.json()).data, [{ title: "first" }, { title: "second" }]);
        else await res.body?.cancel();
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assertEquals(status, 200);
      assertEquals(await applyUserMigrations(databaseTarget(owner), await readUserMigrations(dir)), []);
    });

    await t.step("DDL outside the platform reaches the schema cache through NOTIFY", async () => {
      // An unknown column never forces a reload, so only the event trigger's NOTIFY can make it visible.
      await db.exec("alter table public.todos add column priority int not null default 3");
      let status = 0;
      // Bounded wait (not a timing assertion): NOTIFY crosses connections, slower on a loaded machine.
      for (let i = 0; i < 300 && status !== 200; i++) {
        const res = await p.fetch("/v1/db/todos?select=priority&limit=1", {
          headers: { apikey: p.secretKey },
        });
        status = res.status;
        if (status === 200) assertEquals((await res.json()).data, [{ priority: 3 }]);
        else await res.body?.cancel();
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assertEquals(status, 200);
    });

    await t.step("a changed applied file is refused", async () => {
      await Deno.writeTextFile(join(dir, "0001_todos.sql"), "create table todos (id int);");
      await assertRejects(
        () => readUserMigrations(dir).then((m) => applyUserMigrations(databaseTarget(owner), m)),
        /changed after it was applied/,
      );
    });

    await t.step("a failing file is rolled back and not recorded", async () => {
      const bad = await folder({
        "0001_bad.sql": "create table half (id int); select * from no_such_table;",
      });
      dirs.push(bad);
      await assertRejects(
        () => readUserMigrations(bad).then((m) => applyUserMigrations(databaseTarget(owner), m)),
        /0001_bad.sql" failed/,
      );
      assertEquals(await ownerSql(p, "select to_regclass('public.half') is null as gone"), [{ gone: true }]);
      assertEquals(
        await ownerSql(
          p,
          "select count(*)::int as n from migrations.schema_migrations where name = '0001_bad.sql'",
        ),
        [{ n: 0 }],
      );
    });

    await t.step("through a running platform with the secret key", async () => {
      const more = await folder({ "0003_tags.sql": "create table tags (name text primary key);" });
      dirs.push(more);
      const target = httpTarget("http://127.0.0.1", p.secretKey, async (req) => await p.handler(req));
      assertEquals(await applyUserMigrations(target, await readUserMigrations(more)), ["0003_tags.sql"]);
      assertEquals(await applyUserMigrations(target, await readUserMigrations(more)), []);
      const res = await p.fetch("/v1/db/tags", { headers: { apikey: p.secretKey } });
      assertEquals(await res.json(), { data: [], meta: null });
    });
  } finally {
    await p.close();
    for (const d of dirs) await Deno.remove(d, { recursive: true });
  }
});

Deno.test("deno task migrate and postgrest-js over a real socket", async () => {
  const sandbox = await makeSandbox();
  const dir = await folder({
    "0001_todos.sql":
      `create table todos (id serial primary key, title text not null, done boolean default false);
      insert into todos (title) values ('over the wire');`,
  });
  const child = await spawnPlatform(sandbox.env);
  try {
    const cli = new URL("../cli/migrate.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--unstable-kv", cli, dir, "--url", child.url, "--key", sandbox.secretKey],
      stdout: "piped",
      stderr: "piped",
      // A liveness bound, not a timing claim: a CLI that never ends is killed (SIGTERM) and the test fails.
      signal: AbortSignal.timeout(180_000),
    }).output();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    assertEquals(new TextDecoder().decode(out.stdout).trim(), "Applied 1 migration(s): 0001_todos.sql");

    const client = new PostgrestClient(`${child.url}/rest/v1`, { headers: { apikey: sandbox.publicKey } });
    const { data, error, status } = await client.from("todos").select("title, done").eq("done", false);
    assertEquals([status, error, data], [200, null, [{ title: "over the wire", done: false }]]);
    const insert = await client.from("todos").insert({ title: "anon writes" }).select("title").single();
    assertEquals([insert.status, insert.data], [201, { title: "anon writes" }]);
  } finally {
    await child.stop();
    await sandbox.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});
