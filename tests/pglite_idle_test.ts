import { serve } from "../lib/serve.ts";
import { openPglite, readRestFile } from "../db/pglite.ts";
import { configurePglite, pgliteHealth, pgliteLimits } from "../db/pglite_health.ts";
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, startPlatform, type TestPlatform, within } from "./harness.ts";
import { restAfterStart } from "../services/platform.ts";
import { deploy, FUNCTIONS, waitUntil } from "./jobs_fixtures.ts";
import { WsClient } from "./realtime_client.ts";

// Idle project databases (PGLITE_IDLE_SECS) close and open again on the next call. On PostgreSQL the setting
// has no effect: the same requests run there, and the tests check that no database ever rests.

const IDLE = { PGLITE_IDLE_SECS: "1" };

/** Whether the embedded database of project `ref` is open now (null: no such embedded database). */
function isOpen(ref: string): boolean | null {
  return pgliteHealth().instances.find((i) => i.name === `project ${ref}`)?.open ?? null;
}

/** PGlite: waits until the project's database has closed for idleness. PostgreSQL: waits past the idle time and checks it is open. */
async function waitForRest(p: TestPlatform, ref = "default"): Promise<void> {
  if (p.platform.dbs.kind === "pglite") {
    await waitUntil(`project ${ref} to rest`, () => isOpen(ref) === false);
  } else {
    await new Promise((r) => setTimeout(r, 1500));
    assertEquals(p.platform.dbs.resting(ref), false);
    assertEquals(isOpen(ref), null); // no embedded database at all
  }
}

async function sql(p: TestPlatform, query: string): Promise<Json> {
  const res = await json(
    await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } }),
  );
  assertEquals(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

Deno.test("pglite idle: calls made while the engine is closing or closed wait for it and succeed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-idle-" });
  const before = pgliteLimits.idleSecs;
  configurePglite({ idleSecs: 0.2 });
  // The first due-work query is held, so that calls arrive while the database is on its way to rest.
  const { promise: release, resolve: letClose } = Promise.withResolvers<void>();
  const { promise: closing, resolve: closingStarted } = Promise.withResolvers<void>();
  let asked = 0;
  const db = await openPglite(dir, {
    closeWhenIdle: {
      dueAt: async (q) => {
        if (++asked === 1) {
          closingStarted();
          await release;
        }
        return Number((await q.query<{ due: string }>("select '12345'::text as due"))[0]!.due);
      },
    },
  });
  const name = dir.split("/").filter(Boolean).at(-1)!;
  const open = () => pgliteHealth().instances.find((i) => i.name === name)?.open;
  const everyKind = (first: number) => [
    db.query("insert into t values ($1) returning id", [first]),
    db.exec(`insert into t values (${first + 1})`),
    db.transaction(async (tx) => await tx.query("insert into t values ($1) returning id", [first + 2])),
    db.pipeline([{ sql: `insert into t values (${first + 3})`, params: [] }], { end: "commit" }),
  ];
  try {
    await db.exec("create table t (id int primary key)");
    const notes: string[] = [];
    const unlisten = await db.listen("idle_channel", (payload) => notes.push(payload));
    // A liveness bound (60 s), not a timing claim: an engine that never goes to rest would hold it forever.
    await within(closing, 60_000, "the engine's first due-work query (its way to rest)");
    // Calls made while the engine is asked for its due work: they run, and keep it open.
    const calls = Promise.all(everyKind(1));
    letClose();
    await calls;

    await waitUntil("the engine to rest", () => open() === false);
    // Due work read as it closed (epoch 12345 ms, long past): a periodic check must open it, not skip it.
    assertEquals(db.isResting(Date.now()), false);
    assertEquals(db.isResting(0), true);
    // Every kind of call on the closed database, at once: one engine opens, and each runs on it.
    await Promise.all([...everyKind(5), db.query("select pg_notify('idle_channel', 'after reopen')")]);
    assertEquals(open(), true);
    assertEquals((await db.query<{ id: number }>("select id from t order by id")).map((r) => r.id), [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
    ]);
    // The LISTEN made before the close was listened to again on the new engine.
    await waitUntil("the notification", () => notes.includes("after reopen"));
    await unlisten();
  } finally {
    letClose();
    configurePglite({ idleSecs: before });
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pglite idle: concurrent requests across closes and reopens all succeed; data survives", async () => {
  const p = await startPlatform(IDLE);
  try {
    await sql(
      p,
      "create table public.idle_items (id int primary key, label text); grant all on public.idle_items to anon;",
    );
    const headers = { apikey: p.secretKey, "content-type": "application/json", prefer: "return=minimal" };
    let next = 0;
    const burst = () =>
      Promise.all(Array.from({ length: 12 }, (_, i) => {
        if (i % 3 === 0) {
          const id = ++next;
          return p.fetch("/rest/v1/idle_items", {
            method: "POST",
            headers,
            json: { id, label: `row ${id}` },
          });
        }
        return p.fetch("/rest/v1/idle_items?select=id&order=id", { headers: { apikey: p.secretKey } });
      }));
    for (let round = 0; round < 4; round++) {
      await waitForRest(p);
      // The first burst finds the database closed; later ones race its next close (requests keep coming).
      const answers = await burst();
      for (const res of answers) {
        const text = await res.text();
        assert(res.status === 200 || res.status === 201, `status ${res.status}: ${text}`);
      }
    }
    await waitForRest(p);
    const rows = await json(
      await p.fetch("/rest/v1/idle_items?select=id,label&order=id", { headers: { apikey: p.secretKey } }),
    );
    assertEquals(rows.status, 200);
    assertEquals(rows.body.length, next);
    assertEquals(rows.body.at(-1), { id: next, label: `row ${next}` });
  } finally {
    await p.close();
  }
});

/**
 * Deploys function `fn` and schedules it once a minute, at the second `secs` from now; answers when the tick is
 * due (epoch ms).
 */
async function tickIn(p: TestPlatform, name: string, fn: string, secs: number): Promise<number> {
  await deploy(p, p.secretKey, fn, FUNCTIONS.fine);
  const second = (new Date().getUTCSeconds() + secs) % 60;
  const created = await json(
    await p.fetch("/v1/functions/cron", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { name, schedule: `${second} * * * * *`, function_name: fn },
    }),
  );
  assertEquals(created.status, 201, JSON.stringify(created.body));
  return new Date(created.body.data.next_run).getTime();
}

/** Waits for the jobs of function `fn` and answers them. */
async function jobsOf(p: TestPlatform, fn: string): Promise<Json[]> {
  let jobs: Json[] = [];
  await waitUntil(`the job of ${fn}`, async () => {
    const res = await json(await p.fetch("/v1/functions/jobs", { headers: { apikey: p.secretKey } }));
    jobs = (res.body.data as Json[]).filter((j) => j.function_name === fn);
    return jobs.length > 0;
  }, 90_000);
  return jobs;
}

Deno.test("pglite idle: a cron tick due while the project rests fires once", async () => {
  const p = await startPlatform(IDLE, { workers: true });
  try {
    // A few seconds from now: time enough for the database to rest first.
    const due = await tickIn(p, "idle-cron", "idle-tick", 6);
    await waitForRest(p);
    if (p.platform.dbs.kind === "pglite") {
      // Nothing touches the database now: the ticker leaves it closed until the tick falls due, then opens it.
      if (Date.now() < due - 200) assert(p.platform.dbs.resting("default"));
      await waitUntil("the ticker to open the project", () => isOpen("default") === true, 90_000);
    }
    assertEquals((await jobsOf(p, "idle-tick")).length, 1);
    const entry = await json(await p.fetch("/v1/functions/cron", { headers: { apikey: p.secretKey } }));
    const cron = (entry.body.data as Json[]).find((e) => e.name === "idle-cron");
    assertEquals(new Date(cron.last_run).getTime() >= due, true);
    assertEquals(new Date(cron.next_run).getTime() > due, true);
  } finally {
    await p.close();
  }
});

Deno.test("pglite idle: a realtime subscriber gets changes made after the project rested and reopened", async () => {
  const p = await startPlatform(IDLE);
  const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
  const query = new URLSearchParams({ apikey: p.publicKey });
  let client: WsClient | undefined;
  try {
    await sql(
      p,
      `create table public.idle_feed (id int primary key, body text);
       grant all on public.idle_feed to anon;
       select realtime.enable('public.idle_feed');`,
    );
    client = await WsClient.connect(`ws://127.0.0.1:${server.addr.port}/v1/realtime/ws?${query}`);
    await client.subscribe({ channel: "feed", postgres_changes: [{ event: "*", table: "idle_feed" }] });
    for (const id of [1, 2]) {
      // The subscriber alone does not keep the database open; the write opens it and the change still comes.
      await waitForRest(p);
      const res = await p.fetch("/rest/v1/idle_feed", {
        method: "POST",
        headers: { apikey: p.secretKey, "content-type": "application/json", prefer: "return=minimal" },
        json: { id, body: `after rest ${id}` },
      });
      assertEquals(res.status, 201);
      const event = await client.next(
        (m) => m.type === "event" && m.channel === "feed" && m.payload.record?.id === id,
        10_000,
      );
      assertEquals(event.payload.type, "INSERT");
      assertEquals(event.payload.record, { id, body: `after rest ${id}` });
    }
  } finally {
    await client?.close();
    await server.shutdown();
    await p.close();
  }
});

/** Whether the embedded database named `name` (`control`, `project <ref>`) is open now (null: none such). */
function isOpenNamed(name: string): boolean | null {
  return pgliteHealth().instances.find((i) => i.name === name)?.open ?? null;
}

Deno.test("pglite idle: the control database rests too; readiness and the workers' rounds leave it closed", async () => {
  const p = await startPlatform(IDLE, { workers: true });
  try {
    if (p.platform.dbs.kind === "postgres") {
      await new Promise((r) => setTimeout(r, 1500));
      assertEquals(p.platform.dbs.controlResting(), false);
    } else {
      // Probed all along (a load balancer's readiness checks): it rests all the same.
      await waitUntil("the control database to rest under readiness probes", async () => {
        const ready = await p.fetch("/v1/ready");
        assertEquals(ready.status, 200, await ready.text());
        return isOpenNamed("control") === false;
      });
      assert(p.platform.dbs.controlResting());
      // A probe reports a resting database ready without opening it.
      const ready = await p.fetch("/v1/ready");
      assertEquals(ready.status, 200, await ready.text());
      // The workers list projects every second (cron) and at each sweep: from memory.
      await new Promise((r) => setTimeout(r, 2500));
      assertEquals(isOpenNamed("control"), false);
    }
    // The list kept in memory follows creations and deletions at once.
    await p.platform.projects.create({ ref: "restless" });
    assert((await p.platform.projects.list()).some((project) => project.ref === "restless"));
    // Settings kept in memory too: a ref deleted and created again does not get the old project's.
    await p.platform.data.settings.update("restless", { schemas: ["api", "public"] });
    assertEquals((await p.platform.data.settingsOf("restless")).schemas, ["api", "public"]);
    await p.platform.projects.delete("restless");
    assert(!(await p.platform.projects.list()).some((project) => project.ref === "restless"));
    await p.platform.projects.create({ ref: "restless" });
    assertEquals((await p.platform.data.settingsOf("restless")).schemas, ["public"]);
  } finally {
    await p.close();
  }
});

Deno.test("pglite idle: after the start no engine stays open; a new project rests until called, without the control database", async () => {
  // The default idle time: only the start's own rest closes anything here.
  const p = await startPlatform({}, { workers: true });
  try {
    await p.platform.projects.create({ ref: "newborn" });
    const key = (await p.platform.projects.keys("newborn")).public_key;
    const pglite = p.platform.dbs.kind === "pglite";
    if (pglite) {
      // Made and migrated by a child process: never opened here, and resting until its first call.
      assertEquals([isOpen("default"), isOpen("newborn")], [null, null]);
      assert(p.platform.dbs.resting("default") && p.platform.dbs.resting("newborn"));
    }
    await restAfterStart(p.platform);
    if (pglite) {
      await waitUntil("the control database to rest after the start", () => isOpenNamed("control") === false);
    } else {
      assertEquals(p.platform.dbs.controlResting(), false);
    }
    const res = await p.fetch("http://newborn.localhost/rest/v1/", { headers: { apikey: key } });
    assertEquals(res.status, 200, await res.text());
    if (pglite) {
      // The caller's key, its project and its settings were kept at the start: only its project opened.
      assertEquals(isOpen("newborn"), true);
      assertEquals(isOpenNamed("control"), false);
      assertEquals(isOpen("default"), null);
    }
  } finally {
    await p.close();
  }
});

Deno.test("pglite idle: after a restart, a cleanly closed project stays closed until its tick is due or a caller comes", async () => {
  const first = await startPlatform(IDLE, { workers: true });
  const sandbox = first.sandbox;
  let firstClosed = false;
  let second: TestPlatform | undefined;
  try {
    // A second project with a row, asked for by its host after the restart (made first: a creation runs a
    // child process, which a loaded machine makes slow).
    await first.platform.projects.create({ ref: "sleeper" });
    const sleeperKey = (await first.platform.projects.keys("sleeper")).secret_key;
    const made = await first.fetch("http://sleeper.localhost/v1/sql", {
      method: "POST",
      headers: { apikey: sleeperKey },
      json: { query: "create table public.naps (id int primary key); insert into public.naps values (7);" },
    });
    assertEquals(made.status, 200, await made.text());
    // Far enough ahead for the restart and the checks below to come first.
    const due = await tickIn(first, "restart-cron", "restart-tick", 20);
    await first.close({ keepSandbox: true });
    firstClosed = true;

    second = await startPlatform(IDLE, { workers: true, sandbox });
    const p = second;
    const pglite = p.platform.dbs.kind === "pglite";
    if (pglite) {
      // Neither project database was opened by the start, nor by the workers' first rounds.
      await new Promise((r) => setTimeout(r, 1500));
      assert(Date.now() < due - 1000, "the restart took so long that the tick fell due: nothing to check");
      assertEquals([isOpen("default"), isOpen("sleeper")], [null, null]);
      assert(p.platform.dbs.resting("default") && p.platform.dbs.resting("sleeper"));
      // A request refused for its key opens nothing.
      const refused = await p.fetch("http://sleeper.localhost/rest/v1/naps?select=id");
      assertEquals(refused.status, 401, await refused.text());
      assertEquals(isOpen("sleeper"), null);
    }
    // An admitted request by the project's host opens it and finds its data.
    const naps = await json(
      await p.fetch("http://sleeper.localhost/rest/v1/naps?select=id", {
        headers: { apikey: sleeperKey },
      }),
    );
    assertEquals([naps.status, naps.body], [200, [{ id: 7 }]]);
    if (pglite) {
      assertEquals(isOpen("sleeper"), true);
      // Nothing calls the default project: the cron ticker opens it when its tick falls due, not before.
      await waitUntil("the ticker to open the default project", () => isOpen("default") === true, 90_000);
      const opened = Date.now();
      assert(opened >= due - 100, `opened ${due - opened} ms before the tick was due`);
    }
    // The tick that fell due while the project was closed across the restart fires once.
    assertEquals((await jobsOf(p, "restart-tick")).length, 1);
    const entries = await json(await p.fetch("/v1/functions/cron", { headers: { apikey: p.secretKey } }));
    const cron = (entries.body.data as Json[]).find((e) => e.name === "restart-cron");
    assert(new Date(cron.last_run).getTime() >= due);
  } finally {
    if (second) await second.close();
    else if (!firstClosed) await first.close();
    else await sandbox.destroy();
  }
});

Deno.test("pglite idle: a rest file says when work falls due, with its memo, once the engine ends cleanly, and goes when it opens", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-rest-" });
  const restFile = `${dir}.rest`;
  const before = pgliteLimits.idleSecs;
  configurePglite({ idleSecs: 0.2 });
  let failDue = false;
  let memo: string | Error | null = "the catalog as it closed";
  const db = await openPglite(dir, {
    closeWhenIdle: {
      dueAt: async (q) => {
        if (failDue) throw new Error("due work unreadable");
        return Number((await q.query<{ due: string }>("select '12345'::text as due"))[0]!.due);
      },
      restFile,
      restTag: "v2",
      memo: async (q) => {
        await q.query("select 1");
        if (memo instanceof Error) throw memo;
        return memo;
      },
    },
  });
  const name = dir.split("/").filter(Boolean).at(-1)!;
  const open = () => pgliteHealth().instances.find((i) => i.name === name)?.open;
  const due = async (tag = "v2") => (await readRestFile(restFile, dir, tag))?.dueAt;
  try {
    assertEquals(await due(), undefined);
    await waitUntil("the engine to rest", () => open() === false);
    await waitUntil("the rest file", async () => await due() === 12345);
    assertEquals(await readRestFile(restFile, dir, "v2"), { dueAt: 12345, memo: "the catalog as it closed" });
    // A call opens the database: the file goes before the engine starts, so a crash now leaves none.
    await db.query("select 1");
    assertEquals(await due(), undefined);
    // Due work that cannot be read: no file, and the next process opens the database to look.
    failDue = true;
    await waitUntil("the engine to rest again", () => open() === false);
    assertEquals(await due(), undefined);
    failDue = false;
    // A memo that cannot be made, or too large to keep: the file says when work falls due, without one.
    for (const failing of [new Error("catalog unreadable"), "x".repeat(8 * 1048576 + 1), null]) {
      memo = failing;
      await db.query("select 1");
      await waitUntil("the engine to rest once more", () => open() === false);
      await waitUntil("the rest file again", async () => await due() === 12345);
      assertEquals(await readRestFile(restFile, dir, "v2"), { dueAt: 12345 });
    }
    memo = "the catalog as it closed";
    await db.query("select 1");
    // A close (the platform stopping) asks too.
    await db.close();
    assertEquals(await readRestFile(restFile, dir, "v2"), { dueAt: 12345, memo: "the catalog as it closed" });
    // A file written under another tag (before an upgrade: another migration level) is not trusted.
    assertEquals(await due("v3"), undefined);
    // Nor one written for another state of the directory (a copy put back, an open since).
    const written = JSON.parse(await Deno.readTextFile(restFile));
    const control = `${dir}/global/pg_control`;
    const state = await Deno.readFile(control);
    await Deno.writeFile(control, state.map((b, i) => i === 100 ? b ^ 1 : b));
    assertEquals(await due(), undefined);
    await Deno.writeFile(control, state);
    assertEquals(await due(), 12345);
    // Nor is a file that says anything else.
    for (const dueAt of ['"soon"', "1e999", "{}"]) {
      const text = `{"due_at":${dueAt},"state":"${written.state}","tag":"v2"}`;
      await Deno.writeTextFile(restFile, text);
      assertEquals(await due(), undefined, text);
    }
    for (const text of ["", "{", "[]", '{"due_at":null}']) {
      await Deno.writeTextFile(restFile, text);
      assertEquals(await due(), undefined, text);
    }
    // A memo that is not text is no memo.
    await Deno.writeTextFile(restFile, JSON.stringify({ ...written, memo: { tables: [] } }));
    assertEquals(await readRestFile(restFile, dir, "v2"), { dueAt: 12345 });
    await Deno.writeTextFile(restFile, JSON.stringify({ ...written, due_at: null }));
    assertEquals(await due(), null);
  } finally {
    configurePglite({ idleSecs: before });
    await db.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(restFile).catch(() => {});
  }
});

Deno.test("pglite idle: a memo too slow for the platform's stop is left out of the rest file, not the rest", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-rest-" });
  const restFile = `${dir}.rest`;
  const db = await openPglite(dir, {
    closeWhenIdle: {
      dueAt: () => Promise.resolve(null),
      restFile,
      // Never made: the close waits for it its 5 s, then writes the file without it.
      memo: () => new Promise<never>(() => {}),
    },
  });
  try {
    await db.query("select 1");
    await db.close();
    assertEquals(await readRestFile(restFile, dir), { dueAt: null });
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(restFile).catch(() => {});
  }
});

Deno.test("pglite idle: with PGLITE_IDLE_SECS=0 (never closed when idle) no rest file is written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pglite-rest-never-" });
  const restFile = `${dir}.rest`;
  const before = pgliteLimits.idleSecs;
  configurePglite({ idleSecs: 0 });
  try {
    const db = await openPglite(dir, { closeWhenIdle: { dueAt: () => Promise.resolve(null), restFile } });
    await db.query("select 1");
    await db.close();
    assertEquals(await Deno.stat(restFile).then(() => true, () => false), false);
  } finally {
    configurePglite({ idleSecs: before });
    await Deno.remove(dir, { recursive: true });
  }
});
