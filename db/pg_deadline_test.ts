// A transaction's timeout on PostgreSQL holds whatever its SQL does: lifted by `set statement_timeout = 0`,
// spread over many statements each under it, or trapped by PL/pgSQL (`exception when query_canceled`). The
// sessions are a plain role's, as the platform's pools on project databases are. Runs against the PostgreSQL
// every CI phase has.
import { assertEquals } from "../tests/assert.ts";
import { type PipelineStatement, sqlState } from "./driver.ts";
import { openPostgres } from "./postgres.ts";

const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

/** A DO block that runs until its backend ends: it traps every cancel, statement timeout included. */
const TRAPPED_LOOP = `do $$ begin
  loop
    begin
      perform pg_sleep(0.05);
    exception when query_canceled then null;
    end;
  end loop;
end $$`;

Deno.test("PostgreSQL transaction timeout: SQL cannot lift, trap or outlast it", async (t) => {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const role = `deadline_${suffix}`;
  const table = `deadline_${suffix}`;
  const admin = openPostgres(SERVER, { max: 1 });
  await admin.exec(`create role ${role} login nosuperuser`);
  await admin.exec(`create table ${table} (id int); grant select, insert on ${table} to ${role}`);
  const url = new URL(SERVER);
  url.username = role;
  url.password = "";
  const db = openPostgres(url.toString(), { max: 2, prepare: false });
  // The platform ends a session past its deadline from its own side first, so the pool's next query on that
  // connection is not given the server's last words (postgres.js would fail it with them).
  const query = async (text: string) => [...await db.query(text)];
  const count = () => query(`select count(*)::int as n from ${table}`);
  /** Waits until no session of the role runs a statement: a stopped backend is gone (a guard of 20 s, no timing). */
  const noneActive = async () => {
    let n = -1;
    for (let i = 0; i < 200 && n !== 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const [row] = await admin.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where usename = $1 and state <> 'idle'",
        [role],
      );
      n = row!.n;
    }
    assertEquals(n, 0, "a session of the role still runs a statement");
  };
  const outcome = async (fn: Parameters<typeof db.transaction>[0]) => {
    try {
      await db.transaction(fn, { timeoutMs: 300, prepare: false });
      return "committed";
    } catch (err) {
      return sqlState(err) ?? String(err);
    }
  };
  try {
    await t.step("set statement_timeout = 0, then a long sleep: cancelled, rolled back", async () => {
      const state = await outcome(async (tx) => {
        await tx.exec(`insert into ${table} values (1)`);
        await tx.execRows("set statement_timeout = 0; select pg_sleep(30)");
      });
      assertEquals(state, "57014");
      assertEquals(await count(), [{ n: 0 }]);
    });

    await t.step("many statements each under the timeout: the transaction still ends", async () => {
      const state = await outcome(async (tx) => {
        await tx.exec(`insert into ${table} values (2)`);
        for (let i = 0; i < 200; i++) await tx.exec("select pg_sleep(0.05)");
      });
      assertEquals(state, "57014");
      assertEquals(await count(), [{ n: 0 }]);
    });

    await t.step("a statement that traps every cancel: its backend is terminated", async () => {
      const state = await outcome(async (tx) => {
        await tx.exec(`insert into ${table} values (3)`);
        await tx.exec(TRAPPED_LOOP);
      });
      assertEquals(state, "57014");
      await noneActive();
      assertEquals(await count(), [{ n: 0 }]);
    });

    await t.step("concurrent statements, the timeout lifted: the transaction still ends", async () => {
      const state = await outcome(async (tx) => {
        await tx.execRows("set statement_timeout = 0");
        await Promise.all([
          tx.query("select pg_sleep($1::float8)", [3]),
          tx.query("select $1::int as one", [1]),
          tx.query("select 2 as two"),
        ]);
      });
      assertEquals(state, "57014");
      await noneActive();
    });

    // The same trapped pipeline with its values as parameters (sent describe-first, queued on the connection)
    // and written in the text.
    for (
      const [name, statements] of [
        ["a pipeline with parameters that traps its timeout: its backend is terminated", [
          { sql: "select pg_catalog.set_config('statement_timeout', $1, true)", params: ["300"] },
          { sql: `insert into ${table} values ($1)`, params: [7] },
          { sql: TRAPPED_LOOP, params: [] },
        ]],
        ["a pipeline that traps its statement timeout: its backend is terminated", [
          { sql: "select pg_catalog.set_config('statement_timeout', '300', true)", params: [] },
          { sql: `insert into ${table} values (4)`, params: [] },
          { sql: TRAPPED_LOOP, params: [] },
        ]],
      ] as [string, PipelineStatement[]][]
    ) {
      await t.step(name, async () => {
        let state = "";
        try {
          await db.pipeline(statements, { end: "commit", timeoutMs: 300 });
          state = "committed";
        } catch (err) {
          state = sqlState(err) ?? String(err);
        }
        assertEquals(state, "57014");
        await noneActive();
        assertEquals(await count(), [{ n: 0 }]);
      });
    }

    await t.step("the server's own timeout still answers first when left in place", async () => {
      let message = "";
      try {
        await db.transaction((tx) => tx.exec("select pg_sleep(30)"), { timeoutMs: 300 });
      } catch (err) {
        message = (err as Error).message;
      }
      assertEquals(message, "canceling statement due to statement timeout");
    });

    await t.step("the pool is whole afterwards, and work in time commits", async () => {
      // Both connections in use at once: each that was terminated connects again, and answers.
      await Promise.all([query("select pg_sleep(0.05)"), query("select pg_sleep(0.05)")]);
      assertEquals(await outcome((tx) => tx.exec(`insert into ${table} values (5)`)), "committed");
      await db.pipeline([{ sql: `insert into ${table} values (6)`, params: [] }], {
        end: "commit",
        timeoutMs: 300,
      });
      const rows = await Promise.all([1, 2, 3].map(async () => [...await db.query("select 1 as one")]));
      assertEquals(rows.flat(), [{ one: 1 }, { one: 1 }, { one: 1 }]);
      assertEquals(await query(`select id from ${table} order by id`), [{ id: 5 }, { id: 6 }]);
      // Nothing of the role is left running on the server.
      await noneActive();
    });
  } finally {
    await db.close();
    await admin.exec(`drop table if exists ${table}`).catch(() => {});
    await admin.exec(`drop role if exists ${role}`).catch(() => {});
    await admin.close();
  }
});
