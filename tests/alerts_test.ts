import { assert, assertEquals } from "./assert.ts";
import { type Json, startPlatform } from "./harness.ts";
import { alertClient, newSecret, ticks } from "./alerts_fixtures.ts";
import { deploy, FUNCTIONS, waitUntil } from "./jobs_fixtures.ts";
import { webhookReceiver } from "./notification_fakes.ts";
import { settle } from "./notification_settle.ts";
import { recordTransition } from "../services/alerts/store.ts";

const ENV = { NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1", ALERTS_EVAL_SECS: "1" };

Deno.test("alerts fire and resolve through signed webhooks, once, honouring cooldown and enabled", async (t) => {
  // The evaluator's timer is off: the test drives each tick itself, so nothing depends on timing.
  const p = await startPlatform(ENV, { workers: true, alertTimer: false });
  const secret = newSecret();
  const hook = webhookReceiver(secret);
  const c = alertClient(p);
  const tick = ticks();
  const evaluate = () => p.platform.alerts.evaluate("default", tick.next());
  const received = (path: string) => hook.received.filter((w) => w.path === path);
  try {
    await c.webhookSettings(secret);
    await c.deploy("flaky");

    let alert: Json;
    await t.step("error_rate > 0.5: one triggered event and one signed webhook naming it", async () => {
      alert = await c.watch(`${hook.url}/flaky`, "flaky errors", "error_rate gt 0.5", {
        function_name: "flaky",
      });
      assertEquals([alert.state, alert.enabled, alert.window_secs, alert.cooldown_secs], [
        "ok",
        true,
        300,
        0,
      ]);
      await c.invoke("flaky", 1);
      assertEquals((await evaluate()).triggered, 0); // 0 of 1 failed
      assertEquals((await c.get(alert.id)).last_value, 0);
      await c.invoke("flaky", 3, "fail=1"); // 3 of 4 failed
      const r = await evaluate();
      assertEquals(r.triggered, 1);
      const events = await c.events(alert.id);
      assertEquals(events.length, 1);
      assertEquals([events[0].status, events[0].value, events[0].threshold], ["triggered", 0.75, 0.5]);
      assert(events[0].notification_id);
      assertEquals((await settle(p, events[0].notification_id)).status, "delivered");
      const [hit] = received("/flaky");
      assertEquals(received("/flaky").length, 1);
      assertEquals(hit!.body.type, "alert.triggered");
      const data = hit!.body.data as Json;
      assertEquals(data.alert, {
        id: alert.id,
        name: "flaky errors",
        metric: "error_rate",
        condition: "gt",
        threshold: 0.5,
        function_name: "flaky",
      });
      assertEquals([data.value, data.window_secs, data.project_id], [0.75, 300, "default"]);
      assert(!Number.isNaN(Date.parse(data.at)));
      const now = await c.get(alert.id);
      assertEquals([now.state, now.last_value], ["firing", 0.75]);
      assert(now.last_evaluated_at);
    });

    await t.step("no repeat while it stays firing", async () => {
      await c.invoke("flaky", 2, "fail=1");
      assertEquals(await evaluate(), { evaluated: 1, triggered: 0, resolved: 0, recovered: 0 });
      assertEquals(await evaluate(), { evaluated: 1, triggered: 0, resolved: 0, recovered: 0 });
      assertEquals((await c.events(alert.id)).length, 1);
      assertEquals(received("/flaky").length, 1);
    });

    await t.step("healthy again: resolved and its webhook", async () => {
      await c.invoke("flaky", 8); // 5 of 14 failed
      assertEquals((await evaluate()).resolved, 1);
      const events = await c.events(alert.id);
      assertEquals(events.map((e: Json) => e.status), ["resolved", "triggered"]);
      assertEquals(events[0].value, 5 / 14);
      await settle(p, events[0].notification_id);
      const hits = received("/flaky");
      assertEquals(hits.map((h) => h.body.type), ["alert.triggered", "alert.resolved"]);
      assertEquals((hits[1]!.body.data as Json).value, 5 / 14);
      assertEquals((await c.get(alert.id)).state, "ok");
    });

    await t.step("cooldown: no second trigger within cooldown_secs of the last one", async () => {
      await c.deploy("cool");
      const cool = await c.watch(`${hook.url}/cool`, "cool errors", "errors gte 2", {
        function_name: "cool",
        cooldown_secs: 3600,
      });
      await c.invoke("cool", 2, "fail=1");
      assertEquals((await evaluate()).triggered, 1);
      // Resolved by raising the threshold, then true again by lowering it: within the hour, no trigger.
      await c.call("PATCH", `/v1/functions/alerts/${cool.id}`, { threshold: 10 });
      assertEquals((await evaluate()).resolved, 1);
      await c.call("PATCH", `/v1/functions/alerts/${cool.id}`, { threshold: 2 });
      assertEquals((await evaluate()).triggered, 0);
      assertEquals((await c.get(cool.id)).state, "ok");
      assertEquals((await c.events(cool.id)).map((e: Json) => e.status), ["resolved", "triggered"]);
      // Once the cooldown is over (here: shortened to 0), the next tick fires.
      await c.call("PATCH", `/v1/functions/alerts/${cool.id}`, { cooldown_secs: 0 });
      assertEquals((await evaluate()).triggered, 1);
      const events = await c.events(cool.id);
      assertEquals(events.map((e: Json) => e.status), ["triggered", "resolved", "triggered"]);
      await settle(p, events[0].notification_id);
      assertEquals(received("/cool").map((h) => h.body.type), [
        "alert.triggered",
        "alert.resolved",
        "alert.triggered",
      ]);
    });

    await t.step(
      "a disabled alert neither evaluates nor fires; disabling a firing one sends nothing",
      async () => {
        await c.deploy("quiet");
        const quiet = await c.watch(`${hook.url}/quiet`, "quiet errors", "errors gt 0", {
          function_name: "quiet",
        });
        const off = await c.call("PATCH", `/v1/functions/alerts/${quiet.id}`, { enabled: false });
        assertEquals([off.status, off.body.data.enabled], [200, false]);
        await c.invoke("quiet", 3, "fail=1");
        await evaluate();
        await evaluate();
        const after = await c.get(quiet.id);
        assertEquals([after.state, after.last_evaluated_at, after.last_value], ["ok", null, null]);
        assertEquals((await c.events(quiet.id)).length, 0);
        // Enabled: it fires. Disabled while firing, then healthy: nothing is resolved, nothing sent.
        await c.call("PATCH", `/v1/functions/alerts/${quiet.id}`, { enabled: true });
        assertEquals((await evaluate()).triggered, 1);
        const [triggered] = await c.events(quiet.id);
        await settle(p, triggered.notification_id);
        await c.call("PATCH", `/v1/functions/alerts/${quiet.id}`, { enabled: false });
        await c.call("PATCH", `/v1/functions/alerts/${quiet.id}`, { threshold: 1000 });
        await evaluate();
        assertEquals((await c.events(quiet.id)).length, 1);
        assertEquals((await c.get(quiet.id)).state, "firing");
        assertEquals(received("/quiet").length, 1);
      },
    );

    await t.step("duration_p95_ms with a slow function", async () => {
      await c.deploy("slow");
      await c.deploy("fast");
      const slow = await c.watch(`${hook.url}/slow`, "slow p95", "duration_p95_ms gt 200", {
        function_name: "slow",
      });
      const fast = await c.watch(`${hook.url}/fast`, "fast p95", "duration_p95_ms gt 200", {
        function_name: "fast",
      });
      await c.invoke("slow", 3, "sleep=300");
      await c.invoke("fast", 3);
      await evaluate();
      const [event] = await c.events(slow.id);
      assertEquals(event?.status, "triggered");
      assert(event.value >= 285 && event.value < 400, `p95 ${event.value}`); // histogram: within 5%
      assertEquals((await c.events(fast.id)).length, 0);
      const metrics =
        (await c.call("GET", "/v1/functions/metrics?function_name=slow&window_secs=60")).body.data;
      assertEquals([metrics.invocations, metrics.errors, metrics.function_name, metrics.window_secs], [
        3,
        0,
        "slow",
        60,
      ]);
      assert(metrics.duration_avg_ms >= 300 && metrics.duration_p95_ms >= 285, JSON.stringify(metrics));
      await settle(p, event.notification_id);
      assertEquals(received("/slow").length, 1);
    });

    await t.step("a 5xx the function answers itself is an error, a 4xx is not", async () => {
      await c.deploy("answers");
      await c.invoke("answers", 2, "status=503");
      await c.invoke("answers", 1, "status=404");
      await c.invoke("answers", 1);
      const metrics = (await c.call("GET", "/v1/functions/metrics?function_name=answers")).body.data;
      assertEquals([metrics.invocations, metrics.errors, metrics.error_rate], [4, 2, 0.5]);
    });

    await t.step("dlq_depth with dead jobs", async () => {
      await deploy(p, p.secretKey, "doomed", FUNCTIONS.broken);
      const dlq = await c.watch(`${hook.url}/dlq`, "dlq", "dlq_depth gte 2");
      for (let i = 0; i < 2; i++) {
        const job = await c.call("POST", "/v1/functions/jobs", { function_name: "doomed", max_attempts: 1 });
        assertEquals(job.status, 201);
      }
      await waitUntil(
        "two dead jobs",
        async () => (await c.call("GET", "/v1/functions/jobs/dlq")).body.data.length === 2,
      );
      await evaluate();
      const [event] = await c.events(dlq.id);
      assertEquals([event?.status, event?.value], ["triggered", 2]);
      const metrics = (await c.call("GET", "/v1/functions/metrics")).body.data;
      assertEquals([metrics.dlq_depth, metrics.jobs_dead, metrics.jobs_failed], [2, 2, 2]);
      const scoped = (await c.call("GET", "/v1/functions/metrics?function_name=doomed")).body.data;
      // Its job calls answered 500 themselves: errors too.
      assertEquals([scoped.dlq_depth, scoped.invocations, scoped.errors, scoped.error_rate], [2, 2, 2, 1]);
      await settle(p, event.notification_id);
      assertEquals(received("/dlq").map((h) => h.body.type), ["alert.triggered"]);
    });

    await t.step(
      "deleting a function keeps its alerts (0 calls); deleting an alert deletes its events",
      async () => {
        assertEquals((await c.call("DELETE", "/v1/functions/flaky")).status, 200);
        const kept = await c.get(alert.id);
        assertEquals(kept.function_name, "flaky");
        await evaluate();
        assertEquals((await c.get(alert.id)).last_value, 0);
        const del = await c.call("DELETE", `/v1/functions/alerts/${alert.id}`);
        assertEquals([del.status, del.body.data], [200, null]);
        assertEquals((await c.call("GET", `/v1/functions/alerts/${alert.id}/events`)).status, 404);
        const left = await p.internalSql(
          "select count(*)::int as n from platform.alert_events where alert_id = $1",
          [
            alert.id,
          ],
        );
        assertEquals(left[0]?.n, 0);
        assertEquals((await c.call("DELETE", `/v1/functions/alerts/${alert.id}`)).status, 404);
      },
    );
    assertEquals(hook.rejected, 0);
  } finally {
    await hook.close();
    await p.close();
  }
});

Deno.test("alerts: a restart while firing keeps the state (no second trigger)", async () => {
  const first = await startPlatform(ENV, { workers: true, alertTimer: false });
  const secret = newSecret();
  const hook = webhookReceiver(secret);
  let p = first;
  try {
    const c = alertClient(p);
    await c.webhookSettings(secret);
    await c.deploy("shaky");
    const alert = await c.watch(`${hook.url}/shaky`, "shaky", "errors gte 1", { function_name: "shaky" });
    await c.invoke("shaky", 2, "fail=1");
    assertEquals((await p.platform.alerts.evaluate("default", 1)).triggered, 1);
    const [event] = await c.events(alert.id);
    await settle(p, event.notification_id);
    await p.close({ keepSandbox: true });
    p = await startPlatform(ENV, { sandbox: first.sandbox, workers: true, alertTimer: false });
    const again = alertClient(p);
    assertEquals((await again.get(alert.id)).state, "firing");
    assertEquals(await p.platform.alerts.evaluate("default", 2), {
      evaluated: 1,
      triggered: 0,
      resolved: 0,
      recovered: 0,
    });
    assertEquals((await again.events(alert.id)).length, 1);
    assertEquals((await again.get(alert.id)).last_value, 2); // the calls before the restart still count
    assertEquals(hook.received.length, 1);
  } finally {
    await hook.close();
    await p.close();
  }
});

Deno.test("alerts: an event whose notification a stopped process never queued is sent by a later tick, once", async () => {
  const p = await startPlatform(ENV, { workers: true, alertTimer: false });
  const secret = newSecret();
  const hook = webhookReceiver(secret);
  try {
    const c = alertClient(p);
    await c.webhookSettings(secret);
    await c.deploy("steady");
    const alert = await c.watch(`${hook.url}/lost`, "lost", "invocations gte 0", { function_name: "steady" });
    // The first of a transition's two writes, as a process that stopped before the second left it.
    const db = await p.platform.dbs.project("default");
    await db.query(`update platform.alerts set last_tick = 5 where id = $1`, [alert.id]);
    const event = await recordTransition(db, {
      alertId: alert.id,
      tick: 5,
      to: "firing",
      value: 0,
      threshold: 0,
    });
    assert(event);
    await db.query(
      `update platform.alert_events set created_at = now() - interval '1 minute' where id = $1`,
      [
        event.id,
      ],
    );
    assertEquals((await p.platform.alerts.evaluate("default", 6)).recovered, 1);
    const [sent] = await c.events(alert.id);
    assertEquals(sent!.id, event.id);
    assert(sent!.notification_id);
    assertEquals((await settle(p, sent!.notification_id)).status, "delivered");
    assertEquals((await p.platform.alerts.evaluate("default", 7)).recovered, 0);
    assertEquals(hook.received.map((h) => [h.path, h.body.type]), [["/lost", "alert.triggered"]]);
  } finally {
    await hook.close();
    await p.close();
  }
});
