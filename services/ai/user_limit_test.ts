import { assertEquals } from "../../tests/assert.ts";
import type { AppError } from "../../lib/errors.ts";
import { awayFromMinuteEnd, makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { UserLimit } from "./user_limit.ts";

function refusal(take: () => void): unknown[] {
  try {
    take();
  } catch (err) {
    const e = err as AppError;
    return [e.status, e.code, e.headers["retry-after"], e.message];
  }
  return [];
}

Deno.test("UserLimit: a UTC minute per project and user, shared through the control database", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  const options = { perMinute: 2, scope: "ai_user", what: "AI calls", flushMs: 3_600_000 };
  const limit = new UserLimit(dbs.control, options);
  const other = new UserLimit(dbs.control, options); // another instance
  const off = new UserLimit(dbs.control, { ...options, perMinute: 0 });
  await awayFromMinuteEnd(); // a flush forgets the minutes that are over
  const t0 = Date.now() - Date.now() % 60_000;
  try {
    limit.take("p", "u1", t0);
    limit.take("p", "u2", t0 + 2); // another user
    limit.take("q", "u1", t0 + 3); // another project
    await limit.flush();
    other.take("p", "u1", t0 + 4);
    await other.flush(); // adds its one and learns the total of two
    assertEquals(refusal(() => other.take("p", "u1", t0 + 30_000)), [
      429,
      "rate_limit_exceeded",
      "30",
      "Too many AI calls: at most 2 a minute",
    ]);
    limit.take("p", "u1", t0 + 60_000); // the next minute
    for (let i = 0; i < 10; i++) off.take("p", "u1", t0); // 0: no limit
  } finally {
    await limit.close();
    await other.close();
    await off.close();
    await dbs.close();
    await sandbox.destroy();
  }
});
