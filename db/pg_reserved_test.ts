// A PostgreSQL session ended under a transaction (a server restart, pg_terminate_backend) fails that transaction
// alone, and nothing else: nothing is sent on the dead connection, no error escapes a promise (postgres.js would throw one outside
// any, ending the process), and the pool, of one connection here, serves the next query on a new one.
import { assertEquals } from "../tests/assert.ts";
import { openPostgres } from "./postgres.ts";
import { connectionLost } from "./pg_reserved.ts";

const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

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
        const [{ pid }] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid") as [
          { pid: number },
        ];
        await end(pid);
        await new Promise((r) => setTimeout(r, 300));
        await tx.exec("select 1");
      }));
      assertEquals(await result, "lost");
      await poolAnswers("transaction");
    });

    await t.step("ended during a statement of a transaction", async () => {
      const result = outcome(db.transaction(async (tx) => {
        const [{ pid }] = await tx.query<{ pid: number }>("select pg_backend_pid() as pid") as [
          { pid: number },
        ];
        setTimeout(() => end(pid), 200);
        await tx.exec("select pg_sleep(5)");
      }));
      assertEquals(await result, "lost");
      await poolAnswers("query");
    });

    await t.step("ended during a pipeline", async () => {
      const [{ pid }] = await db.query<{ pid: number }>("select pg_backend_pid() as pid") as [
        { pid: number },
      ];
      setTimeout(() => end(pid), 200);
      const result = outcome(db.pipeline(
        [{ sql: "select pg_sleep(5)", params: [] }, { sql: "select 1", params: [] }],
        { end: "commit" },
      ));
      assertEquals(await result, "lost");
      await poolAnswers("transaction");
    });

    await t.step("ended during a pipeline that decides how it ends", async () => {
      const [{ pid }] = await db.query<{ pid: number }>("select pg_backend_pid() as pid") as [
        { pid: number },
      ];
      setTimeout(() => end(pid), 200);
      const result = outcome(
        db.pipeline([{ sql: "select pg_sleep(5)", params: [] }], { end: () => "commit" }),
      );
      assertEquals(await result, "lost");
      await poolAnswers("query");
    });
  } finally {
    await db.close();
    await admin.close();
  }
});
