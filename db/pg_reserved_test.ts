// A PostgreSQL session ended under a transaction (a server restart, pg_terminate_backend) fails that transaction
// alone, and nothing else: nothing is sent on the dead connection, no error escapes a promise (postgres.js would throw one outside
// any, ending the process), and the pool, of one connection here, serves the next query on a new one.
import { assertEquals } from "../tests/assert.ts";
import type { Queryable } from "./driver.ts";
import { openPostgres } from "./postgres.ts";
import { connectionLost } from "../lib/connection_lost.ts";

const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

/** The backend `q`'s next statement runs on. */
async function backendPid(q: Queryable): Promise<number> {
  const [row] = await q.query<{ pid: number }>("select pg_backend_pid() as pid");
  return row!.pid;
}

/** `promise`'s outcome, or "hung" when it has not settled in 20 s (a guard against a hang, not a timing). */
async function outcome(promise: Promise<unknown>): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<string>((resolve) => timer = setTimeout(() => resolve("hung"), 20_000));
  try {
    return await Promise.race([
      promise.then(() => "ok", (err) => connectionLost(err) ? "lost" : `other: ${(err as Error).message}`),
      hung,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("PostgreSQL: a session ended under a transaction fails it alone, and the pool goes on", async (t) => {
  const admin = openPostgres(SERVER, { max: 1 });
  const db = openPostgres(SERVER, { max: 1 });
  const end = (pid: number) => admin.query("select pg_terminate_backend($1::int)", [pid]);
  /** Ends `pid` 200 ms from now (a failure shows as the awaited work hanging, which the steps catch). */
  const endSoon = (pid: number) => setTimeout(() => end(pid).catch(() => {}), 200);
  // postgres.js fails the first query of a connection that connects again with the ended session's error,
  // unsent: the driver sends such a query once more, so the pool's next queries all answer.
  const poolAnswers = async (first: "query" | "transaction") => {
    const transaction = () => outcome(db.transaction((tx) => tx.query("select 1")));
    const queries = () => Promise.all([1, 2, 3].map(() => outcome(db.query("select 1 as one"))));
    if (first === "transaction") assertEquals(await transaction(), "ok");
    assertEquals(await queries(), ["ok", "ok", "ok"]);
    assertEquals(await transaction(), "ok");
    assertEquals(await outcome(db.pipeline([{ sql: "select 1", params: [] }], { end: "commit" })), "ok");
  };
  try {
    await t.step("ended between two statements of a transaction", async () => {
      const result = outcome(db.transaction(async (tx) => {
        const pid = await backendPid(tx);
        await end(pid);
        await new Promise((r) => setTimeout(r, 300));
        await tx.exec("select 1");
      }));
      assertEquals(await result, "lost");
      await poolAnswers("transaction");
    });

    await t.step("ended during a statement of a transaction", async () => {
      const result = outcome(db.transaction(async (tx) => {
        const pid = await backendPid(tx);
        endSoon(pid);
        await tx.exec("select pg_sleep(5)");
      }));
      assertEquals(await result, "lost");
      await poolAnswers("query");
    });

    await t.step("ended during a pipeline", async () => {
      const pid = await backendPid(db);
      endSoon(pid);
      const result = outcome(db.pipeline(
        [{ sql: "select pg_sleep(5)", params: [] }, { sql: "select 1", params: [] }],
        { end: "commit" },
      ));
      assertEquals(await result, "lost");
      await poolAnswers("transaction");
    });

    await t.step("ended during a pipeline that decides how it ends", async () => {
      const pid = await backendPid(db);
      endSoon(pid);
      const result = outcome(
        db.pipeline([{ sql: "select pg_sleep(5)", params: [] }], { end: () => "commit" }),
      );
      assertEquals(await result, "lost");
      await poolAnswers("query");
    });

    await t.step(
      "ended during a pipeline whose statements have parameters (queued on the connection)",
      async () => {
        const pid = await backendPid(db);
        endSoon(pid);
        const result = outcome(db.pipeline([
          { sql: "select pg_sleep($1::float8)", params: [5] },
          { sql: "select $1::int as two", params: [2] },
        ], { end: "commit" }));
        assertEquals(await result, "lost");
        await poolAnswers("transaction");
      },
    );

    await t.step("ended under concurrent statements of a transaction", async () => {
      const result = outcome(db.transaction(async (tx) => {
        const pid = await backendPid(tx);
        endSoon(pid);
        await Promise.all([
          tx.query("select pg_sleep($1::float8)", [5]),
          tx.query("select $1::int as one", [1]),
          tx.query("select 2 as two"),
        ]);
      }));
      assertEquals(await result, "lost");
      await poolAnswers("query");
    });

    await t.step(
      "a transaction waiting for a connection when another one closes still gets one",
      async () => {
        const two = openPostgres(SERVER, { max: 2 });
        try {
          const { promise: hold, resolve: letGo } = Promise.withResolvers<void>();
          // Each transaction's backend by its index: they may learn it in either order.
          const pids: number[] = [];
          const holding = [0, 1].map((i) =>
            outcome(two.transaction(async (tx) => {
              pids[i] = await backendPid(tx);
              await hold;
            }))
          );
          // A liveness bound (30 s), not a timing claim; the transactions are let go so that the pool can close.
          const deadline = Date.now() + 30_000;
          while (pids.filter((p) => p !== undefined).length < 2) {
            if (Date.now() > deadline) {
              letGo();
              throw new Error(`Still waiting after 30 s: both transactions' backends (got ${pids})`);
            }
            await new Promise((r) => setTimeout(r, 20));
          }
          // The pool is full: this one waits in postgres.js's queue.
          const waiting = outcome(two.transaction((tx) => tx.query("select 1")));
          await new Promise((r) => setTimeout(r, 100));
          await end(pids[0]!);
          await new Promise((r) => setTimeout(r, 300));
          letGo();
          assertEquals(await holding[0], "lost");
          assertEquals(await holding[1], "ok");
          assertEquals(await waiting, "ok");
        } finally {
          await two.close();
        }
      },
    );
  } finally {
    await db.close();
    await admin.close();
  }
});

Deno.test("a rejection no one hears is fatal, unless it is a lost connection's (postgres.js's own type fetch)", async () => {
  const db = openPostgres(SERVER, { max: 1 });
  const seen: [string, boolean][] = [];
  // Runs after the pool's guard: notes what the guard let through, then keeps the test process alive.
  const after = (event: PromiseRejectionEvent) => {
    seen.push([(event.reason as { code: string }).code, event.defaultPrevented]);
    event.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", after);
  try {
    // Sent by the server (a severity): a SQLSTATE. Only the session's end counts; a tenant's own
    // `RAISE SQLSTATE 'EPIPE'` does not. A file error's code is no connection's either.
    const rejections: [string, string | undefined][] = [
      ["ECONNRESET", undefined],
      ["EPIPE", undefined],
      ["CONNECTION_CLOSED", undefined],
      ["57P01", "FATAL"],
      ["EPIPE", "ERROR"],
      ["XX000", "ERROR"],
      ["ENOENT", undefined],
    ];
    for (const [code, severity] of rejections) {
      Promise.reject(Object.assign(new Error(code), { code, ...(severity ? { severity } : {}) }));
    }
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(seen, [
      ["ECONNRESET", true],
      ["EPIPE", true],
      ["CONNECTION_CLOSED", true],
      ["57P01", true],
      ["EPIPE", false],
      ["XX000", false],
      ["ENOENT", false],
    ]);
  } finally {
    globalThis.removeEventListener("unhandledrejection", after);
    await db.close();
  }
});
