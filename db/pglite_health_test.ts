import { assert, assertEquals, assertRejects, within } from "../tests/assert.ts";
import { makeSandbox, startPlatform } from "../tests/harness.ts";
import { sqlState } from "./driver.ts";
import { openPglite } from "./pglite.ts";
import { configurePglite, type InstanceHealth, pgliteHealth, pgliteLimits } from "./pglite_health.ts";

const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

/** The health of the embedded database in `dir` (named after its last path segment). */
function healthOf(dir: string): InstanceHealth {
  const name = dir.split("/").pop()!;
  const found = pgliteHealth().instances.find((i) => i.name === name);
  if (!found) throw new Error(`${name} is not open`);
  return found;
}

/** Polls `check` every 50 ms; the bound only stops a broken test from hanging. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

/** Runs `fn` with other PGlite limits, then puts the earlier ones back. */
async function withLimits(limits: Partial<typeof pgliteLimits>, fn: () => Promise<void>): Promise<void> {
  const before = { ...pgliteLimits };
  configurePglite(limits);
  try {
    await fn();
  } finally {
    configurePglite(before);
  }
}

Deno.test("pglite health: an engine broken by deeply nested input is replaced, and what it committed stays", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-broken-" });
  const db = await openPglite(dir, { searchPath: "public, extensions" });
  try {
    await db.exec("create table t (id int primary key)");
    await db.query("insert into t values (1)");
    const heard: string[] = [];
    const unlisten = await db.listen("changes", (payload) => heard.push(payload));
    // A stack overflow inside the engine: PostgreSQL's own depth check does not see it on WebAssembly.
    let caught: unknown;
    await db.query("select $1::jsonb is not null as ok", [deep(100_000)]).catch((err) => caught = err);
    assertEquals(sqlState(caught), "54001");
    // In a pipeline, the statements before it are not committed with it.
    caught = undefined;
    await db.pipeline([
      { sql: "insert into t values (2)", params: [] },
      { sql: "select $1::jsonb is not null as ok", params: [deep(100_000)] },
    ], { end: "commit" }).catch((err) => caught = err);
    assertEquals(sqlState(caught), "54001");
    assertEquals(await db.query("select id from t order by id"), [{ id: 1 }]);
    assertEquals(healthOf(dir).state, "ok");
    assertEquals(healthOf(dir).restarts, 2);
    assertEquals(healthOf(dir).last_restart?.reason, "stack depth limit exceeded");
    await db.query("insert into t values (3)");
    assertEquals(await db.query("select count(*)::int as n from t"), [{ n: 2 }]);
    // The new engine listens where the old one did.
    await db.exec("notify changes, 'after the restart'");
    await until("the notification arrives", () => heard.length > 0);
    assertEquals(heard, ["after the restart"]);
    await unlisten();
    // And its session resolves names as the first one did.
    assertEquals(await db.query("show search_path"), [{ search_path: "public, extensions" }]);
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pglite health: a thread that stops answering is given up, stopped and replaced; commits stay", async () => {
  await withLimits({ stallMs: 1000 }, async () => {
    const dir = await Deno.makeTempDir({ prefix: "pglite-stall-" });
    const db = await openPglite(dir);
    try {
      await db.exec("create table t (id int primary key)");
      await db.query("insert into t values (1)");
      // A call that holds the engine's thread far past any bound (no statement timeout is set here).
      const held = db.query("select pg_sleep(3600)").then(() => null, (err) => err);
      await until("the engine is given up", () => healthOf(dir).state === "restarting");
      assertEquals(healthOf(dir).last_restart?.reason.startsWith("no answer for"), true);
      await until("a new engine is open", () => healthOf(dir).state === "ok");
      // Liveness bounds (60 s), not timing claims: an engine never given up would hold these forever.
      assertEquals(sqlState(await within(held, 60_000, "the held call's end")), "57P01");
      assertEquals(healthOf(dir).restarts, 1);
      assertEquals(await db.query("select id from t"), [{ id: 1 }]);
      await db.query("insert into t values (2)");
      // The old thread stops at its next clock or file access: it keeps no core busy.
      await until("the given-up thread stops", () => pgliteHealth().stuck_threads === 0);
    } finally {
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("pglite health: closing does not wait forever for an engine that does not answer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-close-" });
  const db = await openPglite(dir);
  const held = db.query("select pg_sleep(3600)").then(() => null, (err) => err);
  await new Promise((r) => setTimeout(r, 100));
  // Liveness bounds (60 s), not timing claims: this test is that these end; a hang fails it with the wait's name.
  await within(db.close(), 60_000, "the close of an engine that does not answer");
  assert((await within(held, 60_000, "the held call's end on close")) instanceof Error);
  await until("the given-up thread stops", () => pgliteHealth().stuck_threads === 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("pglite health: a statement's memory is capped, and an engine that grew gives it back once idle", async () => {
  await withLimits({ maxMemoryMb: 1024, recycleMemoryMb: 320 }, async () => {
    const dir = await Deno.makeTempDir({ prefix: "pglite-memory-" });
    const db = await openPglite(dir);
    try {
      await db.exec("create table t (id int primary key); insert into t values (1)");
      const before = healthOf(dir).memory_mb;
      assert(before < 320, `an engine at rest takes ${before} MB`);
      // 300 MB kept inside the engine: allowed, and its memory stays grown until the engine is reopened.
      assertEquals(await db.query("select length(repeat('x', 300000000)) as n"), [{ n: 300_000_000 }]);
      await until(
        "the engine is recycled",
        () => healthOf(dir).restarts === 1 && healthOf(dir).state === "ok",
      );
      assert(
        healthOf(dir).last_restart!.reason.startsWith("memory grew to"),
        healthOf(dir).last_restart!.reason,
      );
      const after = healthOf(dir).memory_mb;
      assert(after < 320, `after the restart the engine takes ${after} MB`);
      // 500 MB returned as a value needs several copies: past the cap it is PostgreSQL's out of memory.
      await assertRejects(() => db.query("select repeat('x', 500000000) as r"), /out of memory/);
      assertEquals(await db.query("select id from t"), [{ id: 1 }]);
    } finally {
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("/v1/ready names an embedded database that stopped answering, until it is replaced", async () => {
  // The platform sets the process's PGlite limits from its config: put them back for the tests after this one.
  await withLimits({}, readyTest);
});

async function readyTest(): Promise<void> {
  const sandbox = await makeSandbox({ PGLITE_STALL_MS: "1000" });
  delete sandbox.env.DATABASE_URL; // this test is about the embedded databases, whatever the suite runs on
  const p = await startPlatform({}, { sandbox });
  try {
    const sql = (query: string) =>
      p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } });
    assertEquals(
      (await sql("create table notes (id int primary key); insert into notes values (1)")).status,
      200,
    );
    const ready = await p.fetch("/v1/ready");
    const readyBody = await ready.json();
    assertEquals(ready.status, 200);
    assertEquals(readyBody.data.pglite.stuck_threads, 0);
    const held = p.internalSql("select pg_sleep(3600)").then(() => null, (err) => err);
    let refused: { status: number; body: { error: { code: string; message: string } } } | undefined;
    await until("/v1/ready refuses", async () => {
      const res = await p.fetch("/v1/ready");
      const body = await res.json();
      if (res.status === 503) refused = { status: res.status, body };
      return res.status === 503;
    });
    assertEquals(refused!.body.error.code, "SERVICE_UNAVAILABLE");
    assert(/"project default" is restarting \(no answer for/.test(refused!.body.error.message));
    await until("/v1/ready answers again", async () => {
      const res = await p.fetch("/v1/ready");
      await res.body?.cancel();
      return res.status === 200;
    });
    // A liveness bound (60 s), not a timing claim: an engine never given up would hold it forever.
    assertEquals(sqlState(await within(held, 60_000, "the held call's end")), "57P01");
    const rows = await p.fetch("/v1/db/notes", { headers: { apikey: p.secretKey } });
    assertEquals((await rows.json()).data, [{ id: 1 }]);
  } finally {
    await p.close();
  }
}
