import { createClient } from "../client/mod.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";

const HELLO = `export default { async fetch(req) {
  const url = new URL(req.url);
  if (url.pathname === "/bytes") return new Response(new Uint8Array([0, 1, 2]));
  return Response.json({ method: req.method, path: url.pathname, body: await req.text(), greeting: Deno.env.get("GREETING") ?? null });
} };`;

Deno.test("client functions, jobs, cron and alerts: every method, happy path and a typical error", async (t) => {
  const s = await servePlatform();
  const admin = createClient(s.url, s.p.secretKey);
  const anon = createClient(s.url, s.p.publicKey);
  try {
    await t.step("functions: deploy, list, get, update, getCode, setEnv, getEnv", async () => {
      const fn = await admin.functions.deploy({ name: "hello", runtime: "deno", code: HELLO });
      assertEquals([fn.name, fn.runtime, fn.is_active], ["hello", "deno", true]);
      assertEquals((await admin.functions.list()).map((f) => f.name), ["hello"]);
      assertEquals((await admin.functions.get("hello")).id, fn.id);
      const updated = await admin.functions.update("hello", { permissions: { timeout_secs: 10 } });
      assertEquals(updated.permissions.timeout_secs, 10);
      assertEquals(await admin.functions.getCode("hello"), HELLO);
      await admin.functions.setEnv("hello", [{ key: "GREETING", value: "hi" }]);
      assertEquals(await admin.functions.getEnv("hello"), [{ key: "GREETING", value: "hi" }]);
      const bad = await rejects(() =>
        admin.functions.deploy({ name: "Bad Name", runtime: "deno", code: HELLO })
      );
      assertEquals([bad.status, bad.code, bad.type], [400, "VALIDATION_ERROR", "invalid_request"]);
      const missing = await rejects(() => admin.functions.get("nope"));
      assertEquals([missing.status, missing.code], [404, "NOT_FOUND"]);
      const forbidden = await rejects(() => anon.functions.list());
      assertEquals([forbidden.status, forbidden.code], [403, "FORBIDDEN"]);
      assertEquals((await rejects(() => admin.functions.getCode("nope"))).status, 404);
      assertEquals((await rejects(() => admin.functions.getEnv("nope"))).status, 404);
      assertEquals((await rejects(() => admin.functions.setEnv("nope", []))).status, 404);
      assertEquals((await rejects(() => admin.functions.update("nope", { is_active: false }))).status, 404);
    });

    await t.step("functions: invoke (JSON and raw), logs, stats", async () => {
      const result = await anon.functions.invoke("hello", { body: { a: 1 }, method: "PUT", path: "/x" });
      assertEquals(result.status, 200);
      assertEquals(result.body, { method: "PUT", path: "/x", body: '{"a":1}', greeting: "hi" });
      const raw = await anon.functions.invoke("hello", { path: "/bytes", raw: true });
      assertEquals([raw.status, raw.headers.get("x-service-invoke-origin")], [200, "function"]);
      assertEquals(new Uint8Array(await raw.arrayBuffer()), new Uint8Array([0, 1, 2]));
      const missing = await rejects(() => anon.functions.invoke("nope"));
      assertEquals([missing.status, missing.code], [404, "NOT_FOUND"]);
      const missingRaw = await rejects(() => anon.functions.invoke("nope", { raw: true }));
      assertEquals([missingRaw.status, missingRaw.code], [404, "NOT_FOUND"]);
      assert(Array.isArray(await admin.functions.logs("hello", { limit: 10 })));
      const stats = await admin.functions.stats("hello", { window: "1h" });
      assertEquals(stats.window, "1h");
      assert(stats.count >= 2);
      assertEquals((await rejects(() => admin.functions.logs("nope"))).status, 404);
      assertEquals(
        (await rejects(() => admin.functions.stats("hello", { window: "2y" as "1h" }))).status,
        400,
      );
    });

    await t.step("jobs: enqueue, list, get, retry, listDeadLetters, requeueDeadLetters", async () => {
      const job = await admin.jobs.enqueue({ function_name: "hello", payload: { n: 1 }, delay_secs: 3600 });
      assertEquals([job.status, job.function_name], ["pending", "hello"]);
      assertEquals((await admin.jobs.list({ status: "pending" })).map((j) => j.id), [job.id]);
      assertEquals((await admin.jobs.get(job.id)).payload, { n: 1 });
      assertEquals((await admin.jobs.retry(job.id)).status, "pending");
      assertEquals(await admin.jobs.listDeadLetters({ limit: 10 }), []);
      assertEquals(await admin.jobs.requeueDeadLetters(), { requeued: 0 });
      assertEquals((await rejects(() => admin.jobs.get(crypto.randomUUID()))).code, "NOT_FOUND");
      assertEquals((await rejects(() => admin.jobs.retry(crypto.randomUUID()))).status, 404);
      assertEquals(
        (await rejects(() => admin.jobs.enqueue({ function_name: "hello", max_attempts: 99 }))).status,
        400,
      );
      assertEquals((await rejects(() => admin.jobs.list({ limit: 0 }))).status, 400);
      assertEquals((await rejects(() => admin.jobs.listDeadLetters({ limit: 501 }))).status, 400);
      assertEquals((await rejects(() => anon.jobs.requeueDeadLetters())).status, 403);
    });

    await t.step("cron: schedule, list, unschedule", async () => {
      const entry = await admin.cron.schedule({
        name: "nightly",
        schedule: "0 3 * * *",
        function_name: "hello",
      });
      assertEquals(entry.schedule, "0 0 3 * * *");
      assertEquals((await admin.cron.list()).map((e) => e.name), ["nightly"]);
      await admin.cron.unschedule("nightly");
      assertEquals(await admin.cron.list(), []);
      const bad = await rejects(() =>
        admin.cron.schedule({ name: "x", schedule: "nope", function_name: "hello" })
      );
      assertEquals([bad.status, bad.code], [400, "VALIDATION_ERROR"]);
      assertEquals((await rejects(() => admin.cron.unschedule("nightly"))).status, 404);
      assertEquals((await rejects(() => anon.cron.list())).status, 403);
    });

    await t.step("alerts: create, list, setEnabled, update, events, allEvents, metrics, delete", async () => {
      const alert = await admin.alerts.create({
        name: "errors",
        metric: "errors",
        condition: "gt",
        threshold: 5,
        channel: "webhook",
        destination: "https://hooks.example.com/alerts",
        function_name: "hello",
      });
      assertEquals([alert.name, alert.enabled, alert.state], ["errors", true, "ok"]);
      assertEquals((await admin.alerts.list()).map((a) => a.id), [alert.id]);
      assertEquals((await admin.alerts.setEnabled(alert.id, false)).enabled, false);
      assertEquals((await admin.alerts.update(alert.id, { threshold: 7 })).threshold, 7);
      assertEquals(await admin.alerts.events(alert.id, { limit: 5 }), []);
      assertEquals(await admin.alerts.allEvents(), []);
      const metrics = await admin.alerts.metrics({ function_name: "hello" });
      assertEquals(metrics.function_name, "hello");
      await admin.alerts.delete(alert.id);
      assertEquals(await admin.alerts.list(), []);
      const bad = await rejects(() =>
        admin.alerts.create({
          name: "bad",
          metric: "nope" as "errors",
          condition: "gt",
          threshold: 1,
          channel: "webhook",
          destination: "https://hooks.example.com/alerts",
        })
      );
      assertEquals([bad.status, bad.code], [400, "VALIDATION_ERROR"]);
      assertMatch(bad.message, /metric/);
      assertEquals((await rejects(() => admin.alerts.setEnabled(alert.id, true))).status, 404);
      assertEquals((await rejects(() => admin.alerts.events(alert.id))).status, 404);
      assertEquals((await rejects(() => admin.alerts.delete(alert.id))).status, 404);
      assertEquals((await rejects(() => admin.alerts.allEvents({ limit: 0 }))).status, 400);
      assertEquals((await rejects(() => admin.alerts.metrics({ function_name: "nope" }))).status, 400);
    });

    await t.step("functions: delete", async () => {
      assertEquals(await admin.functions.delete("hello"), null);
      assertEquals((await rejects(() => admin.functions.delete("hello"))).status, 404);
    });
  } finally {
    admin.close();
    anon.close();
    await s.close();
  }
});
