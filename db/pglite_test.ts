import { sqlState } from "./driver.ts";
import { openPglite } from "./pglite.ts";
import { assert, assertEquals, assertRejects, within } from "../tests/assert.ts";

// The engine runs on its own thread: values, errors, transactions and notifications must cross it unchanged.
Deno.test("pglite driver: the engine's thread answers as the engine does", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-driver-" });
  const db = await openPglite(dir);
  try {
    await db.exec(`create table t (id int8 primary key, doc jsonb, at timestamptz, raw bytea,
      constraint positive check (id > 0))`);

    await t.step("values: int8 as text, json parsed, timestamps as Date, bytea as bytes", async () => {
      const [row] = await db.query<Record<string, unknown>>(
        "insert into t values ($1, $2, $3, $4) returning *",
        [1n, '{"a":[1,2]}', "2026-01-02T03:04:05Z", new Uint8Array([1, 2, 255])],
      );
      assertEquals(row, {
        id: "1",
        doc: { a: [1, 2] },
        at: new Date("2026-01-02T03:04:05Z"),
        raw: new Uint8Array([1, 2, 255]),
      });
      assertEquals(await db.execRows("select 1 as a; select 2 as b"), [{ b: 2 }]);
    });

    await t.step("errors keep their SQLSTATE and fields", async () => {
      let caught: unknown;
      await db.query("insert into t (id) values (-1)").catch((err) => caught = err);
      assertEquals(sqlState(caught), "23514");
      const e = caught as Error & { constraint?: string; table?: string };
      assert(caught instanceof Error);
      assertEquals([e.constraint, e.table], ["positive", "t"]);
      assert(!String(e.stack).includes("pglite_worker"), "the worker's stack crossed over");
    });

    await t.step("transaction: commits when fn resolves, rolls back when it throws", async () => {
      await db.transaction(async (tx) => {
        await tx.query("insert into t (id) values (2)");
        assertEquals(await tx.query("select count(*)::int as n from t"), [{ n: 2 }]);
      });
      await assertRejects(
        () =>
          db.transaction(async (tx) => {
            await tx.query("insert into t (id) values (3)");
            throw new Error("changed my mind");
          }),
        /changed my mind/,
      );
      await assertRejects(() => db.transaction((tx) => tx.query("insert into t (id) values (1)")));
      assertEquals(await db.query("select id from t order by id"), [{ id: "1" }, { id: "2" }]);
    });

    await t.step("a slow statement holds its own thread, not the caller's event loop", async () => {
      const order: string[] = [];
      const slow = db.query("select pg_sleep(0.3)").then(() => order.push("statement"));
      await new Promise((resolve) => setTimeout(resolve, 1));
      order.push("timer");
      await slow;
      assertEquals(order, ["timer", "statement"]);
    });

    await t.step("listen: payloads reach the listener until it unlistens", async () => {
      const heard: string[] = [];
      let arrived = () => {};
      const unlisten = await db.listen("driver_test", (payload) => {
        heard.push(payload);
        arrived();
      });
      // A liveness bound (30 s), not a timing claim: a notification that never arrives fails here.
      await within(
        new Promise<void>((resolve, reject) => {
          arrived = resolve;
          db.exec("notify driver_test, 'one'").catch(reject);
        }),
        30_000,
        "the notification 'one'",
      );
      await unlisten();
      await db.exec("notify driver_test, 'two'");
      await db.query("select 1");
      assertEquals(heard, ["one"]);
    });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
  const err = await db.query("select 1").then(() => null, (e) => e as Error);
  assertEquals(err?.message, "The embedded database is closed");
  await db.close();
});

// The engine cannot interrupt itself (its SIGALRM is a JavaScript timer on its own busy thread), and terminating
// the thread does not stop running WebAssembly: a watched call answers 57014 when its timeout fires, and what it
// did is rolled back once the engine is done with it. The database then goes on.
Deno.test("pglite driver: a statement past its timeout fails with 57014 and keeps nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-timeout-" });
  const db = await openPglite(dir);
  try {
    await db.exec("create table t (id int primary key); insert into t values (1)");

    const slow = db.pipeline([
      { sql: "insert into t values (2)", params: [] },
      { sql: "select pg_sleep(2)", params: [] },
    ], { end: "commit", timeoutMs: 200 });
    const waiting = db.query<{ n: number }>("select count(*)::int as n from t");
    const slowError = await slow.then(() => null, (err) => err);
    assertEquals([sqlState(slowError), (slowError as Error).message], [
      "57014",
      "canceling statement due to statement timeout",
    ]);
    assertEquals(await waiting, [{ n: 1 }]);

    // A read answers 57014 too; one within its timeout answers its rows.
    const read = await db.pipeline([{ sql: "select pg_sleep(1)", params: [] }], {
      end: "commit",
      readOnly: true,
      timeoutMs: 100,
    }).then(() => null, (err) => err);
    assertEquals(sqlState(read), "57014");
    assertEquals(
      await db.pipeline([{ sql: "select count(*)::int as n from t", params: [] }], {
        end: "commit",
        timeoutMs: 10_000,
      }),
      [[{ n: 1 }]],
    );

    // A decided pipeline and a transaction: the watched call fails, nothing of it is kept.
    const decided = await db.pipeline([
      { sql: "insert into t values (3)", params: [] },
      { sql: "select pg_sleep(2)", params: [] },
    ], { end: () => "commit", timeoutMs: 200 }).then(() => null, (err) => err);
    assertEquals(sqlState(decided), "57014");
    const txError = await db.transaction(async (tx) => {
      await tx.query("insert into t values (4)");
      await tx.query("select pg_sleep(2)");
    }, { timeoutMs: 200 }).then(() => null, (err) => err);
    assertEquals(sqlState(txError), "57014");

    await db.transaction((tx) => tx.query("insert into t values (5)"), { timeoutMs: 10_000 });
    await db.pipeline([{ sql: "insert into t values (6)", params: [] }], {
      end: "commit",
      timeoutMs: 10_000,
    });
    assertEquals(await db.query("select id from t order by id"), [{ id: 1 }, { id: 5 }, { id: 6 }]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

// pgvector's files are written into each engine before it starts and its library is loaded on first use.
Deno.test("pglite driver: pgvector installs, answers, and works again after the engine reopens", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-vector-" });
  const options = { searchPath: "extensions, public" };
  let db = await openPglite(dir, options);
  try {
    await db.exec(`create schema extensions; create extension vector schema extensions;
      create table v (id int primary key, e vector(3)); insert into v values (1, '[1,2,3]'), (2, '[0,0,1]')`);
    const nearest = "select id from v order by e <-> '[0,0,2]' limit 1";
    assertEquals(await db.query(nearest), [{ id: 2 }]);
    await db.close();
    db = await openPglite(dir, options);
    await db.exec("create index on v using hnsw (e vector_l2_ops)");
    assertEquals(await db.query(nearest), [{ id: 2 }]);
    assertEquals(await db.query("select e::text as e from v where id = 1"), [{ e: "[1,2,3]" }]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

// The engine loads only the libraries it ships, byte for byte (db/pglite_library_guard.ts): a shipped library
// whose file SQL changed by one byte is refused before it compiles, and the others still load.
Deno.test("pglite driver: a shipped library changed by one byte is refused, the others load", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-library-" });
  const db = await openPglite(dir);
  try {
    await db.exec(
      "select lo_from_bytea(4243, overlay(b placing '\\xff'::bytea from length(b) - 1)) " +
        "from (select pg_read_binary_file('/pglite/lib/postgresql/hstore.so') as b) as shipped; " +
        "select lo_export(4243, '/pglite/lib/postgresql/hstore.so')",
    );
    await assertRejects(() => db.exec("create extension hstore"), /loads only the libraries it ships/);
    await db.exec("create extension citext");
    assertEquals(await db.query("select 'A'::citext = 'a' as ci"), [{ ci: true }]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
