import { assert, assertEquals } from "../../tests/assert.ts";
import { AppError } from "../../lib/errors.ts";
import { nextRun, normalizeSchedule } from "./schedule.ts";

Deno.test("cron schedules are stored as 6 fields and stepped in UTC", async (t) => {
  const ok: [string, string][] = [
    ["*/5 * * * *", "0 */5 * * * *"],
    ["* * * * * *", "* * * * * *"],
    ["  30  2 * * 1-5 ", "0 30 2 * * 1-5"],
    ["@hourly", "0 0 * * * *"],
    ["@daily", "0 0 0 * * *"],
    ["@weekly", "0 0 0 * * 0"],
    ["@monthly", "0 0 0 1 * *"],
    ["@yearly", "0 0 0 1 1 *"],
  ];
  for (const [input, stored] of ok) {
    await t.step(`"${input}" → "${stored}"`, () => assertEquals(normalizeSchedule(input), stored));
  }
  for (
    const bad of ["* * *", "61 * * * * *", "every minute", "", "* * * * * * *", "@sometimes", "0 0 32 * *"]
  ) {
    await t.step(`"${bad}" is a 400`, () => {
      let caught: unknown;
      try {
        normalizeSchedule(bad);
      } catch (err) {
        caught = err;
      }
      assert(caught instanceof AppError && caught.status === 400, `"${bad}" was accepted`);
    });
  }
  await t.step("next run is strictly after the given time", () => {
    assertEquals(
      nextRun("* * * * * *", new Date("2026-01-01T00:00:00.000Z"))?.toISOString(),
      "2026-01-01T00:00:01.000Z",
    );
    assertEquals(
      nextRun("0 0 0 * * *", new Date("2026-01-01T10:00:00Z"))?.toISOString(),
      "2026-01-02T00:00:00.000Z",
    );
  });
});
