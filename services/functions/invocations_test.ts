import type { Databases } from "../../db/databases.ts";
import type { Db } from "../../db/driver.ts";
import { migrate, readMigrations } from "../../db/migrate.ts";
import { openPglite } from "../../db/pglite.ts";
import { openPostgres } from "../../db/postgres.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases, type Sandbox } from "../../tests/harness.ts";
import type { Outcome } from "../../runtime/protocol.ts";
import { BOUNDS, RELATIVE_ERROR } from "./duration_histogram.ts";
import { InvocationRecorder } from "./invocations.ts";
import { Rollup } from "./rollup.ts";
import { below, exactPercentile } from "./test_numbers.ts";

const REF = "default";

async function openDatabases(sandbox: Sandbox): Promise<Databases> {
  const dbs = await openSandboxDatabases(sandbox, 4);
  await dbs.createProject(REF);
  return dbs;
}

// The status defaults to what the invoker passes: the answer's for ok, 504 for a timeout, else 500.
const call = (
  functionId: string,
  outcome: Outcome,
  durationMs: number,
  at = Date.now(),
  status: number | null = outcome === "ok" ? 200 : outcome === "timeout" ? 504 : 500,
) => ({ functionId, functionName: `fn-${functionId.slice(0, 4)}`, status, outcome, durationMs, at });

const STATUS_COLUMNS = "status_1xx, status_2xx, status_3xx, status_4xx, status_5xx";

/** Calls per status class (1xx..5xx) of a rollup row, and of a Rollup. */
const classes = (r: Record<string, unknown>) =>
  [r.status_1xx, r.status_2xx, r.status_3xx, r.status_4xx, r.status_5xx].map(Number);
const rollupClasses = (r: Rollup) => [r.status1xx, r.status2xx, r.status3xx, r.status4xx, r.status5xx];

Deno.test("invocation recorder: rollups per function and minute", async (t) => {
  const sandbox = await makeSandbox();
  const dbs = await openDatabases(sandbox);
  const recorder = new InvocationRecorder(dbs);
  const db = await dbs.project(REF);
  try {
    await t.step("20,000 calls in one second are all counted; percentiles within the error", async () => {
      const id = crypto.randomUUID();
      const durations: number[] = [];
      const outcomes: Outcome[] = ["ok", "ok", "ok", "ok", "ok", "ok", "error", "timeout", "oom", "crash"];
      const okStatuses = [200, 101, 302, 404, 503, 299];
      for (let i = 0; i < 20_000; i++) {
        const d = Math.round((0.05 + ((i * 7919) % 20_000) ** 2 / 1e6) * 100) / 100; // 0.05..400 ms, skewed
        durations.push(d);
        const outcome = outcomes[i % 10]!;
        recorder.record(
          REF,
          call(id, outcome, d, Date.now(), outcome === "ok" ? okStatuses[i % 10] : undefined),
        );
      }
      const stats = await recorder.stats(REF, id, "1h");
      assertEquals(
        [stats.window, stats.count, stats.errors, stats.timeouts, stats.oom],
        ["1h", 20_000, 8_000, 2_000, 2_000],
      );
      const [sums] = await db.query<Record<string, unknown>>(
        `select sum(status_1xx) as status_1xx, sum(status_2xx) as status_2xx, sum(status_3xx) as status_3xx,
                sum(status_4xx) as status_4xx, sum(status_5xx) as status_5xx
         from platform.function_invocation_rollups where function_id = $1`,
        [id],
      );
      // 503 answers and the 8,000 failures (500 or 504) are 5xx.
      assertEquals(classes(sums!), [2_000, 4_000, 2_000, 2_000, 10_000]);
      const sum = durations.reduce((a, b) => a + b, 0);
      assert(Math.abs(stats.avg_ms! - sum / 20_000) <= 0.005, `avg ${stats.avg_ms}`);
      const sorted = durations.sort((a, b) => a - b);
      for (const [q, got] of [[0.5, stats.p50_ms!], [0.95, stats.p95_ms!]] as const) {
        const exact = exactPercentile(sorted, q);
        assert(Math.abs(got - exact) <= RELATIVE_ERROR * exact + 0.005, `p${q * 100}: ${got} vs ${exact}`);
      }
    });

    await t.step("flushes of the same minute add up, histograms slot by slot", async () => {
      const id = crypto.randomUUID();
      const at = Date.UTC(2026, 0, 1, 10, 0, 30);
      const expected = new Rollup(id, "x", 0);
      for (const [i, d] of [3, 3, 250, 0.004, 1_000].entries()) {
        recorder.record(REF, call(id, "ok", d, at + i));
        expected.add("ok", d, 200);
        await recorder.flush(REF);
      }
      const rows = await db.query<
        { bucket: Date; count: string; hist: number[]; min_ms: number; max_ms: number }
      >(
        "select bucket, count, hist, min_ms, max_ms from platform.function_invocation_rollups where function_id = $1",
        [id],
      );
      assertEquals(rows.length, 1);
      assertEquals(new Date(rows[0]!.bucket).toISOString(), "2026-01-01T10:00:00.000Z");
      assertEquals([Number(rows[0]!.count), rows[0]!.min_ms, rows[0]!.max_ms], [5, 0.004, 1_000]);
      assertEquals(`{${rows[0]!.hist.join(",")}}`, expected.histLiteral());
    });

    await t.step("calls per status class are exact and add up across writes of one minute", async () => {
      const id = crypto.randomUUID();
      const at = Date.UTC(2026, 0, 1, 11, 0, 0);
      const writes: [Outcome, number | null][][] = [
        [["ok", 100], ["ok", 199], ["ok", 200], ["ok", 204], ["ok", 301], ["ok", 404], ["ok", 599], [
          "ok",
          null,
        ]],
        [["ok", 200], ["ok", 399], ["ok", 400], ["ok", 499], ["error", 500], ["timeout", 504], [
          "crash",
          null,
        ]],
      ];
      for (const [w, calls] of writes.entries()) {
        for (const [outcome, status] of calls) recorder.record(REF, call(id, outcome, 1, at + w, status));
        await recorder.flush(REF);
      }
      const rows = await db.query<Record<string, unknown>>(
        `select count, ${STATUS_COLUMNS} from platform.function_invocation_rollups where function_id = $1`,
        [id],
      );
      assertEquals(rows.length, 1);
      // The two null statuses are in no class.
      assertEquals([Number(rows[0]!.count), ...classes(rows[0]!)], [15, 2, 3, 2, 3, 3]);
    });

    await t.step("the window counts the minutes that start within it", async () => {
      const id = crypto.randomUUID();
      const ten = new Rollup(id, "old", 0);
      ten.add("ok", 10, 200);
      ten.add("timeout", 10, 504);
      for (const age of ["30 minutes", "2 hours", "3 days", "20 days"]) {
        await db.query(
          `insert into platform.function_invocation_rollups
             (function_id, function_name, bucket, count, errors, timeouts, oom, sum_ms, min_ms, max_ms, hist,
              ${STATUS_COLUMNS})
           values ($1, 'old', date_trunc('minute', now() - $2::interval, 'UTC'), 2, 1, 1, 0, 20, 10, 10, $3::int[],
                   0, 1, 0, 0, 1)`,
          [id, age, ten.histLiteral()],
        );
      }
      const counts: number[] = [];
      for (const window of ["1h", "24h", "7d", "30d"] as const) {
        const stats = await recorder.stats(REF, id, window);
        counts.push(stats.count);
        assertEquals([stats.avg_ms, stats.p50_ms, stats.p95_ms], [10, 10, 10]);
      }
      assertEquals(counts, [2, 4, 6, 8]);
      const none = await recorder.stats(REF, crypto.randomUUID(), "30d");
      assertEquals(none, {
        window: "30d",
        count: 0,
        errors: 0,
        timeouts: 0,
        oom: 0,
        p50_ms: null,
        p95_ms: null,
        avg_ms: null,
      });
    });

    await t.step(
      "a failed write keeps its minutes, merged with later calls, for the next flush",
      async () => {
        const id = crypto.randomUUID();
        await db.exec("alter table platform.function_invocation_rollups rename to rollups_away");
        try {
          for (let i = 0; i < 10; i++) recorder.record(REF, call(id, "error", 5));
          const failing = recorder.flush(REF);
          await new Promise((r) => setTimeout(r, 0)); // usually the write has taken its minutes by now
          for (let i = 0; i < 5; i++) recorder.record(REF, call(id, "ok", 7));
          await failing;
          await recorder.flush(REF);
        } finally {
          await db.exec("alter table platform.rollups_away rename to function_invocation_rollups");
        }
        const stats = await recorder.stats(REF, id, "1h");
        assertEquals([stats.count, stats.errors, stats.avg_ms], [15, 10, 5.67]);
      },
    );

    await t.step("minutes past 30 days are deleted after a write", async () => {
      const id = crypto.randomUUID();
      await db.query(
        `insert into platform.function_invocation_rollups
           (function_id, function_name, bucket, count, errors, timeouts, oom, sum_ms, min_ms, max_ms, hist,
            ${STATUS_COLUMNS})
         values ($1, 'old', date_trunc('minute', now() - interval '31 days', 'UTC'), 1, 0, 0, 0, 1, 1, 1, '{1}',
                 0, 1, 0, 0, 0)`,
        [id],
      );
      // A new recorder: its first write in a project prunes.
      const fresh = new InvocationRecorder(dbs);
      fresh.record(REF, call(id, "ok", 1));
      await fresh.close();
      const [row] = await db.query<{ n: number }>(
        "select count(*)::int as n from platform.function_invocation_rollups where function_id = $1",
        [id],
      );
      assertEquals(row!.n, 1);
    });

    await t.step("beyond the memory bound, calls needing a new minute are not counted", async () => {
      const small = new InvocationRecorder(dbs, { maxRollups: 2 });
      const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      const at = Date.now();
      for (const id of [a, b, c, a, c]) small.record(REF, call(id, "ok", 1, at));
      await small.flush(REF);
      small.record(REF, call(c, "ok", 1, at)); // room again once written
      const counts = [];
      for (const id of [a, b, c]) counts.push((await small.stats(REF, id, "1h")).count);
      await small.close();
      assertEquals(counts, [2, 1, 1]);
    });
  } finally {
    await recorder.close();
    await dbs.close();
    await sandbox.destroy();
  }
});

/** A fresh database with the project migrations before `before` applied. */
async function migratedUpTo(sandbox: Sandbox, before: string): Promise<Db> {
  const db = sandbox.env.DATABASE_URL
    ? openPostgres(sandbox.env.DATABASE_URL, { max: 2 })
    : await openPglite(`${sandbox.env.DATA_DIR}/migration-test`);
  await migrate(db, (await readMigrations("project")).filter((m) => m.name < before));
  return db;
}

Deno.test("migration 0100 turns invocation rows into rollups with the recorder's slots", async () => {
  const sandbox = await makeSandbox();
  const db = await migratedUpTo(sandbox, "0100");
  try {
    const [f, g] = [crypto.randomUUID(), crypto.randomUUID()];
    // Every slot edge and the double just below it, so that SQL and TypeScript must slot them alike.
    const edges = [0, 0.005, 1e7, ...[...BOUNDS].flatMap((b) => [b, below(b)])];
    // Each class's edges, null, and values in no class, so that SQL and TypeScript must class them alike.
    const statuses = [null, 100, 199, 200, 299, 300, 399, 400, 499, 500, 599, 0, 600];
    const expected = new Rollup(f, "f", 0);
    const rows: [string, string, string, number, string, number | null][] = [];
    edges.forEach((d, i) => {
      const outcome = (["ok", "error", "timeout", "oom"] as const)[i % 4]!;
      const status = statuses[i % statuses.length]!;
      rows.push([f, i === edges.length - 1 ? "f-renamed" : "f", outcome, d, "2026-01-01T10:00:30Z", status]);
      expected.add(outcome, d, status);
    });
    rows.push(
      [f, "f", "ok", 2, "2026-01-01T10:01:00Z", 204],
      [g, "g", "crash", 4, "2026-01-01T10:00:59.999Z", 500],
    );
    await db.query(
      `insert into platform.function_invocations
         (function_id, function_name, outcome, duration_ms, created_at, status)
       select * from unnest($1::uuid[], $2::text[], $3::text[], $4::float8[], $5::timestamptz[], $6::int[])`,
      [0, 1, 2, 3, 4, 5].map((c) => rows.map((r) => r[c])),
    );
    // 0100 and the migrations after it are applied, nothing before it again.
    const project = await readMigrations("project");
    assertEquals(
      await migrate(db, project),
      project.map((m) => m.name).filter((name) => name >= "0100"),
    );

    const got = await db.query<Record<string, unknown> & { hist: number[] }>(
      `select function_id, function_name, bucket, count, errors, timeouts, oom, sum_ms, min_ms, max_ms, hist,
              ${STATUS_COLUMNS}
       from platform.function_invocation_rollups order by function_id = $1 desc, bucket`,
      [f],
    );
    const summary = got.map((r) => [
      r.function_name,
      new Date(r.bucket as string).toISOString(),
      Number(r.count),
      Number(r.errors),
      Number(r.timeouts),
      Number(r.oom),
      r.min_ms,
      r.max_ms,
      classes(r),
    ]);
    assertEquals(summary, [
      [
        "f-renamed",
        "2026-01-01T10:00:00.000Z",
        expected.count,
        expected.errors,
        expected.timeouts,
        expected.oom,
        0,
        1e7,
        rollupClasses(expected),
      ],
      ["f", "2026-01-01T10:01:00.000Z", 1, 0, 0, 0, 2, 2, [0, 1, 0, 0, 0]],
      ["g", "2026-01-01T10:00:00.000Z", 1, 1, 0, 0, 4, 4, [0, 0, 0, 0, 1]],
    ]);
    // Not only edges: every class is there.
    assert(rollupClasses(expected).every((n) => n > 0));
    assertEquals(`{${got[0]!.hist.join(",")}}`, expected.histLiteral());
    assert(Math.abs(Number(got[0]!.sum_ms) - expected.sumMs) <= 1e-6 * expected.sumMs);
    const [old] = await db.query<{ t: string | null }>(
      "select to_regclass('platform.function_invocations')::text as t",
    );
    assertEquals(old!.t, null);
  } finally {
    await db.close();
    await sandbox.destroy();
  }
});
