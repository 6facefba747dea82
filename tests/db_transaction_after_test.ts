import { join } from "node:path";
import type { Db } from "../db/driver.ts";
import { openPglite } from "../db/pglite.ts";
import { openPostgres } from "../db/postgres.ts";
import { assertEquals, assertRejects } from "./assert.ts";
import { makeSandbox, serverUrl } from "./harness.ts";

// TransactionOptions.after puts a shared session back however the caller's SQL ended its transaction: on PGlite
// the one session serves everyone; on PostgreSQL a pool of one connection stands for it here.
Deno.test("Db.transaction: `after` runs on the same session once the transaction ends, however it ended", async (t) => {
  const sandbox = await makeSandbox();
  const db: Db = serverUrl
    ? openPostgres(sandbox.env.DATABASE_URL!, { max: 1 })
    : await openPglite(join(sandbox.env.DATA_DIR!, "after"));
  const setting = async () =>
    (await db.query<{ v: string }>("select coalesce(current_setting('my.v', true), '') as v"))[0]!.v;
  try {
    await db.exec("create table kept (id int primary key)");

    await t.step(
      "a commit in the SQL, then an error: what came before stays, the session is reset",
      async () => {
        await assertRejects(() =>
          db.transaction(
            (tx) => tx.exec("insert into kept values (1); set my.v = 'leak'; commit; select 1/0"),
            {
              after: "reset all",
            },
          )
        );
        assertEquals(await setting(), "");
        assertEquals([...await db.query("select id from kept")], [{ id: 1 }]);
      },
    );

    await t.step("an ordinary commit: the work is kept, then the session is reset", async () => {
      await db.transaction(async (tx) => {
        await tx.exec("insert into kept values (2); set my.v = 'leak'");
      }, { after: "reset all" });
      assertEquals(await setting(), "");
      assertEquals([...await db.query("select id from kept order by id")], [{ id: 1 }, { id: 2 }]);
    });

    await t.step("a failure with the transaction still open: rolled back, then reset", async () => {
      await assertRejects(() =>
        db.transaction((tx) => tx.exec("insert into kept values (3); set my.v = 'leak'; select 1/0"), {
          after: "reset all",
        })
      );
      assertEquals(await setting(), "");
      assertEquals([...await db.query("select count(*)::int as n from kept")], [{ n: 2 }]);
    });

    await t.step(
      "an `after` that fails: the session is not used again (PGlite: a new engine; PostgreSQL: a new connection)",
      async () => {
        // The transaction committed and says so; only the session is given up.
        await db.transaction((tx) => tx.exec("insert into kept values (4); set my.v = 'leak'"), {
          after: "select 1/0",
        });
        assertEquals(await setting(), "");
        assertEquals([...await db.query("select id from kept where id = 4")], [{ id: 4 }]);
      },
    );

    await t.step(
      "without `after`, a session-level setting made after a commit stays (what `after` is for)",
      async () => {
        await assertRejects(() => db.transaction((tx) => tx.exec("set my.v = 'stays'; commit; select 1/0")));
        assertEquals(await setting(), "stays");
      },
    );
  } finally {
    await db.close();
    await sandbox.destroy();
  }
});
