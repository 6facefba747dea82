// A transaction's timeout on PostgreSQL holds whatever its SQL does: lifted by `set statement_timeout = 0`, or
// spread over many statements each under it. Runs against the PostgreSQL every CI phase has.
import { assertEquals } from "../tests/assert.ts";
import { sqlState } from "./driver.ts";
import { openPostgres } from "./postgres.ts";

const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

Deno.test("PostgreSQL transaction timeout: SQL cannot lift it, and it bounds the statements' sum", async (t) => {
  const db = openPostgres(SERVER, { max: 2, prepare: false });
  const table = `deadline_${crypto.randomUUID().replaceAll("-", "")}`;
  try {
    await db.exec(`create table ${table} (id int)`);
    const outcome = async (fn: Parameters<typeof db.transaction>[0]) => {
      try {
        await db.transaction(fn, { timeoutMs: 300, prepare: false });
        return "committed";
      } catch (err) {
        return sqlState(err) ?? String(err);
      }
    };

    await t.step("set statement_timeout = 0, then a long sleep: cancelled, rolled back", async () => {
      const state = await outcome(async (tx) => {
        await tx.exec(`insert into ${table} values (1)`);
        await tx.execRows("set statement_timeout = 0; select pg_sleep(30)");
      });
      assertEquals(state, "57014");
      assertEquals([...await db.query(`select count(*)::int as n from ${table}`)], [{ n: 0 }]);
    });

    await t.step("many statements each under the timeout: the transaction still ends", async () => {
      const state = await outcome(async (tx) => {
        await tx.exec(`insert into ${table} values (2)`);
        for (let i = 0; i < 200; i++) await tx.exec("select pg_sleep(0.05)");
      });
      assertEquals(state, "57014");
      assertEquals([...await db.query(`select count(*)::int as n from ${table}`)], [{ n: 0 }]);
    });

    await t.step("the server's own timeout still answers first when left in place", async () => {
      let message = "";
      try {
        await db.transaction((tx) => tx.exec("select pg_sleep(30)"), { timeoutMs: 300 });
      } catch (err) {
        message = (err as Error).message;
      }
      assertEquals(message, "canceling statement due to statement timeout");
    });

    await t.step("the pool is whole afterwards, and a transaction in time commits", async () => {
      assertEquals(
        await outcome(async (tx) => {
          await tx.exec(`insert into ${table} values (3)`);
        }),
        "committed",
      );
      const rows = await Promise.all([1, 2, 3].map(() => db.query<{ one: number }>("select 1 as one")));
      assertEquals(rows.map((r) => [...r]).flat(), [{ one: 1 }, { one: 1 }, { one: 1 }]);
      assertEquals([...await db.query(`select id from ${table}`)], [{ id: 3 }]);
    });
  } finally {
    await db.exec(`drop table if exists ${table}`).catch(() => {});
    await db.close();
  }
});
