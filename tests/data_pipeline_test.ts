import { join } from "node:path";
import { type Db, sqlState } from "../db/driver.ts";
import { openPglite } from "../db/pglite.ts";
import { openPostgres } from "../db/postgres.ts";
import { assert, assertEquals } from "./assert.ts";
import { makeSandbox, serverUrl } from "./harness.ts";

/** The error a promise rejects with (the test fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

// Db.pipeline carries every data API request: one transaction sent in one go. Its semantics must equal those of
// transaction() with the same statements, on both drivers.
Deno.test("Db.pipeline: one transaction, rows per statement, errors roll back", async (t) => {
  const sandbox = await makeSandbox();
  const db: Db = serverUrl
    ? openPostgres(sandbox.env.DATABASE_URL!, { max: 3 })
    : await openPglite(join(sandbox.env.DATA_DIR!, "pipeline"));
  try {
    await db.exec("create table kv (k text primary key, v int8 not null, doc json)");
    const keys = async () => (await db.query<{ k: string }>("select k from kv order by k")).map((r) => r.k);

    await t.step(
      "rows of each statement in order, parameters as text, values parsed as query() does",
      async () => {
        const rows = await db.pipeline([
          { sql: "select set_config('app.who', $1, true) as who", params: ["ann"] },
          { sql: "insert into kv values ($1, $2, $3) returning *", params: ["a", 7, '{"x":[1,2]}'] },
          {
            sql:
              "select current_setting('app.who') as who, $1::int + 1 as n, $2::boolean as b, $3::text as z",
            params: [41, true, null],
          },
        ], { end: "commit" });
        assertEquals(rows, [
          [{ who: "ann" }],
          [{ k: "a", v: "7", doc: { x: [1, 2] } }],
          [{ who: "ann", n: 42, b: true, z: null }],
        ]);
        assertEquals(await keys(), ["a"]);
        // set_config(…, true) lasted for the transaction only.
        const [after] = await db.query<{ who: string | null }>(
          "select current_setting('app.who', true) as who",
        );
        assert(!after?.who, "a local setting leaked out of its transaction");
      },
    );

    await t.step("end: rollback discards, even after the statements ran", async () => {
      const [[row]] = await db.pipeline([{ sql: "insert into kv values ('b', 1) returning k", params: [] }], {
        end: "rollback",
      }) as [[{ k: string }]];
      assertEquals(row.k, "b");
      assertEquals(await keys(), ["a"]);
    });

    await t.step(
      "the first failing statement's error is thrown and everything before it undone",
      async () => {
        // More attempts than connections: each connection comes back clean.
        for (let i = 0; i < 5; i++) {
          const err = await rejection(db.pipeline([
            { sql: "insert into kv values ($1, 1)", params: [`c${i}`] },
            { sql: "insert into kv values ('a', 2)", params: [] },
            { sql: "select 1/0", params: [] },
          ], { end: "commit" }));
          assertEquals(sqlState(err), "23505");
        }
        assertEquals(await keys(), ["a"]);
        assertEquals([...await db.query("select 1 as ok")], [{ ok: 1 }]);
      },
    );

    await t.step("a bad parameter fails like a bad statement", async () => {
      const err = await rejection(
        db.pipeline([{ sql: "insert into kv values ('d', $1)", params: ["not a number"] }], {
          end: "commit",
        }),
      );
      assertEquals(sqlState(err), "22P02");
      assertEquals(await keys(), ["a"]);
    });

    await t.step("end as a function sees the rows and decides; when it throws, nothing stays", async () => {
      let seen: unknown;
      await db.pipeline([{ sql: "insert into kv values ('e', 5) returning v", params: [] }], {
        end: (rows) => {
          seen = rows;
          return "rollback";
        },
      });
      assertEquals(seen, [[{ v: "5" }]]);
      assertEquals(await keys(), ["a"]);
      const err = await rejection(db.pipeline([{ sql: "delete from kv returning k", params: [] }], {
        end: ([rows]) => {
          throw new Error(`would delete ${rows!.length}`);
        },
      }));
      assertEquals((err as Error).message, "would delete 1");
      assertEquals(await keys(), ["a"]);
      await db.pipeline([{ sql: "insert into kv values ('f', 6)", params: [] }], { end: () => "commit" });
      assertEquals(await keys(), ["a", "f"]);
    });

    await t.step("readOnly refuses writes (25006) and changes nothing", async () => {
      const err = await rejection(
        db.pipeline([{ sql: "delete from kv", params: [] }], { end: "commit", readOnly: true }),
      );
      assertEquals(sqlState(err), "25006");
      assertEquals(await keys(), ["a", "f"]);
    });

    await t.step(
      "a NOTIFY committed by a pipeline or a query reaches the listeners of its channel",
      async () => {
        const heard: string[] = [];
        let wake = () => {};
        const unlisten = await db.listen("pipeline_test", (payload) => {
          heard.push(payload);
          wake();
        });
        // Waits for the n-th notification; a lost one fails the step instead of hanging the suite.
        const next = (n: number) =>
          heard.length >= n ? Promise.resolve() : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`notification ${n} never came`)), 10_000);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        try {
          await db.pipeline([{ sql: "select pg_notify('pipeline_test', $1)", params: ["from a pipeline"] }], {
            end: "commit",
          });
          await next(1);
          await db.pipeline([{ sql: "select pg_notify('pipeline_test', 'rolled back')", params: [] }], {
            end: "rollback",
          });
          await db.query("select pg_notify('pipeline_test', $1)", ["from a query"]);
          await next(2);
          assertEquals(heard, ["from a pipeline", "from a query"]);
        } finally {
          await unlisten();
        }
      },
    );

    await t.step("concurrent pipelines and transactions do not see each other's local settings", async () => {
      const work = Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? db.transaction(async (tx) => {
            await tx.query("select set_config('app.who', $1, true)", [`tx${i}`]);
            return (await tx.query<{ who: string }>("select current_setting('app.who') as who"))[0]!.who;
          })
          : db.pipeline([
            { sql: "select set_config('app.who', $1, true)", params: [`p${i}`] },
            { sql: "select current_setting('app.who') as who", params: [] },
          ], { end: "commit", readOnly: true }).then((rows) => rows[1]![0]!.who as string));
      assertEquals(
        await Promise.all(work),
        Array.from({ length: 12 }, (_, i) => `${i % 3 === 0 ? "tx" : "p"}${i}`),
      );
    });
  } finally {
    await db.close();
    await sandbox.destroy();
  }
});

// Each distinct statement text is prepared once per session (connection). The cache is a bounded LRU: many query
// shapes must not grow the server's prepared statements without bound, and recent texts must stay prepared.
// pg_prepared_statements lists one session's statements: one connection makes every pipeline share it.
Deno.test("Db.pipeline: prepared statements stay within their bound, least recently used evicted", async () => {
  const cap = 8;
  const sandbox = await makeSandbox();
  const db: Db = serverUrl
    ? openPostgres(sandbox.env.DATABASE_URL!, { max: 1, maxPrepared: cap })
    : await openPglite(join(sandbox.env.DATA_DIR!, "prepared"), { maxPrepared: cap });
  const shape = (i: number) => `select $1::int + ${i} as n /* bound test */`;
  // The texts this test prepared, as the server lists them (the counting statement has no marker of its own).
  const prepared = async () => {
    const [rows] = await db.pipeline([{
      sql: "select statement from pg_prepared_statements where statement like $1",
      params: ["%/* bound test */%"],
    }], { end: "commit", readOnly: true });
    return rows!.map((r) => String(r.statement));
  };
  const holds = (texts: string[], i: number) => texts.some((t) => t.startsWith(shape(i)));
  try {
    for (let i = 0; i < cap * 4; i++) {
      const rows = await db.pipeline([{ sql: shape(i), params: [1] }], { end: "commit", readOnly: true });
      assertEquals(rows, [[{ n: 1 + i }]]);
      const texts = await prepared();
      assert(texts.length <= cap, `${texts.length} statements prepared after ${i + 1} texts, over ${cap}`);
      assert(holds(texts, i), `text ${i}, just used, is not prepared`);
    }
    const texts = await prepared();
    assert(!holds(texts, 0), "the least recently used text is still prepared");
    // An evicted text runs again (prepared anew) and answers the same.
    assertEquals(await db.pipeline([{ sql: shape(0), params: [5] }], { end: "commit" }), [[{ n: 5 }]]);
    const after = await prepared();
    assert(after.length <= cap && holds(after, 0), "the evicted text was not prepared again");
    // A batch with more new texts than the bound still runs (the surplus unnamed) and stays within it.
    const batch = Array.from({ length: cap + 3 }, (_, i) => ({ sql: shape(100 + i), params: [i] }));
    const rows = await db.pipeline(batch, { end: "commit" });
    assertEquals(rows.map((r) => r[0]), batch.map((_, i) => ({ n: 100 + 2 * i })));
    assert((await prepared()).length <= cap, "a large batch went over the bound");
  } finally {
    await db.close();
    await sandbox.destroy();
  }
});
