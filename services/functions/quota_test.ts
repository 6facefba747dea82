import { assert, assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { InvocationQuota } from "./quota.ts";

Deno.test("invocation quota: a flush returns once every count taken before it is stored, the timer's included", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  const quota = new InvocationQuota(dbs.control, 1000);
  try {
    for (let i = 0; i < 5; i++) await quota.take("quota");
    // A flush already storing these five (as the timer's does each second), then one asked for now, which
    // finds nothing pending: it must still wait for the five to be stored.
    let earlierDone = false;
    const earlier = quota.flush().then(() => earlierDone = true);
    await quota.flush();
    assert(earlierDone, "the flush waited for the one storing before it");
    await earlier;
    const month = new Date().toISOString().slice(0, 7);
    const rows = await dbs.control.query<{ count: number | string }>(
      "select count from platform.invocation_usage where project_ref = 'quota' and month = $1",
      [month],
    );
    assertEquals(Number(rows[0]?.count), 5, "every call counted once");
  } finally {
    await quota.close();
    await dbs.close();
    await sandbox.destroy();
  }
});
