import { assertEquals } from "../../tests/assert.ts";
import { awayFromMinuteEnd, makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { SharedRateLimit } from "./rate_limit.ts";

// Two SharedRateLimits on one control database stand for two instances: they share nothing but the database.
// Flushes are made by hand (the timer is set far away), so each step knows what each side has learnt.
const HOUR = 3_600_000;

Deno.test("SharedRateLimit: one count per key and minute across instances sharing the control database", async (t) => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  const a = new SharedRateLimit(dbs.control, { perMinute: 3, name: "test", flushMs: HOUR });
  const b = new SharedRateLimit(dbs.control, { perMinute: 3, name: "test", flushMs: HOUR });
  await awayFromMinuteEnd(); // a flush forgets the minutes that are over
  // The middle of the current minute: the windows are UTC minutes, and `now` is what take() is given.
  const minute = Date.now() - Date.now() % 60_000;
  const now = minute + 30_000;
  try {
    await t.step("a refusal says when the next minute starts", () => {
      for (let i = 0; i < 3; i++) assertEquals(a.take("k1", now).ok, true);
      assertEquals(a.take("k1", now), { ok: false, retryAfterSeconds: 30 });
      assertEquals(a.take("k2", now).ok, true, "another key has its own count");
    });

    await t.step("an instance refuses once the counts of the others, flushed, reach the limit", async () => {
      assertEquals(b.take("k3", now).ok, true);
      assertEquals(b.take("k3", now).ok, true);
      await b.flush();
      assertEquals(a.take("k3", now).ok, true, "a has not flushed yet: it knows only its own count");
      await a.flush(); // adds its one and learns the total of three
      assertEquals(a.take("k3", now).ok, false);
      await b.flush(); // nothing pending: b learns nothing new until it counts again
      assertEquals(b.take("k3", now).ok, true, "within one flush window, one more per other instance");
      await b.flush();
      assertEquals(b.take("k3", now).ok, false);
      const [row] = await dbs.control.query<{ count: string | number }>(
        "select count from platform.invoke_rate_windows where key = 'k3'",
      );
      assertEquals(Number(row?.count), 4);
    });

    await t.step("counts being flushed still count: a take during the upsert sees them", async () => {
      for (let i = 0; i < 3; i++) assertEquals(a.take("k5", now).ok, true);
      const flushing = a.flush(); // moves the three to the upsert in flight, which has not answered yet
      assertEquals(a.take("k5", now).ok, false);
      await flushing;
      assertEquals(a.take("k5", now).ok, false);
    });

    await t.step("a count given back is taken off the shared total", async () => {
      assertEquals(a.take("k4", now).ok, true);
      assertEquals(a.take("k4", now).ok, true);
      await a.flush();
      a.giveBack("k4", now); // pending goes below zero: the flush adds a negative count
      await a.flush();
      const [row] = await dbs.control.query<{ count: string | number }>(
        "select count from platform.invoke_rate_windows where key = 'k4'",
      );
      assertEquals(Number(row?.count), 1);
      assertEquals(b.take("k4", now).ok, true);
      assertEquals(b.take("k4", now).ok, true);
      await b.flush();
      assertEquals(b.take("k4", now).ok, false, "1 left by a, 2 by b: the limit of 3");
    });

    await t.step("keys with NUL are stored, and a new minute starts from zero", async () => {
      for (let i = 0; i < 3; i++) assertEquals(a.take("p\u0000q", now).ok, true);
      await a.flush();
      assertEquals(a.take("p\u0000q", now).ok, false);
      assertEquals(a.take("p\u0000q", minute + 60_000).ok, true);
    });
  } finally {
    await a.close();
    await b.close();
    await dbs.close();
    await sandbox.destroy();
  }
});
