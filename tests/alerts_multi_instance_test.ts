import { assertEquals } from "./assert.ts";
import { type Json, serverUrl, startPlatform, type TestPlatform } from "./harness.ts";
import { alertClient, newSecret } from "./alerts_fixtures.ts";
import { waitUntil } from "./jobs_fixtures.ts";
import { webhookReceiver } from "./notification_fakes.ts";
import { settle } from "./notification_settle.ts";

const ENV = { NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1", ALERTS_EVAL_SECS: "1" };

/** Sets up a failing function and an alert on it; returns the alert. */
async function failingAlert(p: TestPlatform, hookUrl: string, secret: string): Promise<Json> {
  const c = alertClient(p);
  await c.webhookSettings(secret);
  await c.deploy("broken");
  const alert = await c.watch(`${hookUrl}/broken`, "broken", "error_rate gt 0.5", {
    function_name: "broken",
  });
  await c.invoke("broken", 4, "fail=1");
  return alert;
}

Deno.test("alerts: two evaluators on one database evaluate each alert once per tick", async (t) => {
  const secret = newSecret();
  const hook = webhookReceiver(secret);
  const a = await startPlatform(ENV, { workers: true, alertTimer: false });
  // On PostgreSQL a second platform shares the database (and KV path); PGlite is one process per data
  // directory, so there the two evaluators race on the one platform, which exercises the same claim.
  const b = serverUrl
    ? await startPlatform(ENV, { sandbox: a.sandbox, workers: true, alertTimer: false })
    : a;
  try {
    const alert = await failingAlert(a, hook.url, secret);
    await a.platform.functions.recorder.flush("default");

    await t.step("the same tick on both: one evaluation, one event, one webhook", async () => {
      for (const tick of [1, 2, 3]) {
        const [ra, rb] = await Promise.all([
          a.platform.alerts.evaluate("default", tick),
          b.platform.alerts.evaluate("default", tick),
        ]);
        assertEquals(ra.evaluated + rb.evaluated, 1, `tick ${tick}`);
        assertEquals(ra.triggered + rb.triggered, tick === 1 ? 1 : 0, `tick ${tick}`);
      }
      // An older tick (a process whose clock is behind) takes nothing.
      assertEquals((await b.platform.alerts.evaluate("default", 2)).evaluated, 0);
      const events = await alertClient(b).events(alert.id);
      assertEquals(events.length, 1);
      await settle(a, events[0].notification_id);
      assertEquals(hook.received.filter((w) => w.path === "/broken").length, 1);
    });
  } finally {
    if (b !== a) await b.close({ keepSandbox: true });
    await a.close();
  }
  await hook.close();
});

Deno.test("alerts: the evaluator's timers on two instances fire once (ALERTS_EVAL_SECS=1)", async () => {
  const secret = newSecret();
  const hook = webhookReceiver(secret);
  const a = await startPlatform(ENV, { workers: true });
  const b = serverUrl ? await startPlatform(ENV, { sandbox: a.sandbox, workers: true }) : null;
  try {
    const alert = await failingAlert(a, hook.url, secret);
    const c = alertClient(a);
    await waitUntil("the alert to fire", async () => (await c.events(alert.id)).length > 0);
    // Three more ticks of both timers, each seen by the alert's last_evaluated_at moving on.
    for (let i = 0; i < 3; i++) {
      const seen = (await c.get(alert.id)).last_evaluated_at;
      await waitUntil("a later tick", async () => (await c.get(alert.id)).last_evaluated_at !== seen);
    }
    const events = await c.events(alert.id);
    assertEquals(events.map((e: Json) => e.status), ["triggered"]);
    await settle(a, events[0].notification_id);
    assertEquals(hook.received.map((w) => w.body.type), ["alert.triggered"]);
  } finally {
    if (b) await b.close({ keepSandbox: true });
    await a.close();
  }
  await hook.close();
});
