import {
  createClient,
  type Notification,
  type NotificationRule,
  type NotificationTemplate,
} from "../client/mod.ts";
import { assert, assertEquals } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";
import { fakeFcm, fakeTwilio } from "./notification_fakes.ts";

/** Every key of `T`, listed: the list must name them all, and nothing else. */
function keysOf<T>() {
  return <const K extends readonly (keyof T)[]>(
    keys: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : never),
  ) => keys;
}

const NOTIFICATION = keysOf<Notification>()([
  "id",
  "channel",
  "recipient",
  "subject",
  "body",
  "event",
  "payload",
  "template_id",
  "variables",
  "metadata",
  "idempotency_key",
  "rule_id",
  "event_id",
  "status",
  "attempts",
  "max_attempts",
  "last_error",
  "provider",
  "provider_message_id",
  "scheduled_at",
  "next_attempt_at",
  "queued_at",
  "sending_at",
  "sent_at",
  "delivered_at",
  "failed_at",
  "dead_lettered_at",
  "suppressed_at",
  "created_at",
  "updated_at",
]); // deno-fmt-ignore
const TEMPLATE = keysOf<NotificationTemplate>()([
  "id", "project_id", "name", "channel", "subject", "body", "created_at", "updated_at",
]); // deno-fmt-ignore
const RULE = keysOf<NotificationRule>()([
  "id", "name", "trigger_type", "condition", "channel", "recipient_expr", "template_id", "subject", "body",
  "delay_secs", "enabled", "created_at", "updated_at",
]); // deno-fmt-ignore

const sorted = (keys: readonly string[]) => [...keys].sort();

Deno.test("client notifications: every operation and its admin ones, happy path and a typical error", async (t) => {
  // A webhook receiver: /ok answers 200, anything else 500.
  const receiver = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => new Response(null, { status: new URL(req.url).pathname === "/ok" ? 200 : 500 }),
  );
  const hook = `http://127.0.0.1:${receiver.addr.port}`;
  const s = await servePlatform({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1" }, { workers: true });
  const admin = createClient(s.url, s.p.secretKey);
  const n = admin.notifications;
  const settle = async (id: string, status: string) => {
    for (let i = 0; i < 600; i++) {
      const got = await n.get(id);
      if (got.status === status) return got;
      await new Promise((r) => setTimeout(r, 50));
    }
    const last = await n.get(id);
    throw new Error(`Notification ${id} never reached ${status}: ${last.status} (${last.last_error})`);
  };
  try {
    await t.step("admin settings: update then get; a bad value is 400", async () => {
      const settings = await n.admin.updateSettings({
        email: { host: "127.0.0.1", from: "a@example.com" },
        retry: { max_attempts: 1, base_delay_ms: 10 },
      });
      assertEquals((settings.retry as { max_attempts: number }).max_attempts, 1);
      assertEquals((await n.admin.getSettings()).retry, settings.retry);
      const bad = await rejects(() =>
        n.admin.updateSettings({ retry: { max_attempts: 0, base_delay_ms: 10 } })
      );
      assertEquals([bad.status, bad.code], [400, "VALIDATION_ERROR"]);
    });

    await t.step("send, sendWebhook, sendEmail, sendSms, sendPush, sendBatch, get, list", async () => {
      const sent = await n.sendWebhook(`${hook}/ok`, "order.paid", { id: 1 }, { idempotencyKey: "k1" });
      assertEquals(sorted(Object.keys(sent)), sorted(NOTIFICATION));
      assertEquals((await settle(sent.id, "delivered")).event, "order.paid");
      assertEquals(
        (await n.sendWebhook(`${hook}/ok`, "order.paid", { id: 1 }, { idempotencyKey: "k1" })).id,
        sent.id,
      );
      const email = await n.sendEmail("ada@example.com", "Hello", "Hi Ada", { metadata: { k: "v" } });
      assertEquals([email.channel, email.subject, email.metadata], ["email", "Hello", { k: "v" }]);
      const plain = await n.send("email", "bob@example.com", "Hi Bob", { subject: "Hey" });
      assertEquals(plain.recipient, "bob@example.com");
      // SMS and push have no provider configured: 400, naming the settings to set.
      assertEquals((await rejects(() => n.sendSms("+15550001111", "hi"))).status, 400);
      assertEquals((await rejects(() => n.sendPush("fcm:abcdefgh12345", "Title", "hi"))).status, 400);
      assertEquals((await rejects(() => n.send("email", "", "x"))).code, "VALIDATION_ERROR");
      const batch = await n.sendBatch([
        { channel: "webhook", recipient: `${hook}/ok`, event: "a", payload: "x" },
        { channel: "sms", recipient: "+15550001111", body: "x" },
      ]);
      assert(batch.results[0]!.notification);
      assertEquals(batch.results[1]!.error?.code, "VALIDATION_ERROR");
      assertEquals((await rejects(() => n.sendBatch([]))).status, 400);
      const listed = await n.list({ channel: "email", sort: "created_at", order: "asc", limit: 10 });
      assertEquals(listed.map((x) => x.id), [email.id, plain.id]);
      assertEquals((await rejects(() => n.list({ limit: 1000 }))).status, 400);
      assertEquals((await rejects(() => n.get(crypto.randomUUID()))).status, 404);
    });

    await t.step("sendSms and sendPush reach their providers once configured", async () => {
      const twilio = fakeTwilio("AC123", "twilio-token");
      const fcm = await fakeFcm("demo-app");
      try {
        await n.admin.updateSettings({
          sms: {
            base_url: twilio.url,
            account_sid: "AC123",
            auth_token: "twilio-token",
            from: "+15550001111",
          },
          push: {
            fcm: { base_url: fcm.url, token_url: `${fcm.url}/token`, service_account: fcm.serviceAccount },
          },
        });
        const sms = await n.sendSms("+15550002222", "Your code is 123456");
        assertEquals([sms.channel, sms.recipient], ["sms", "+15550002222"]);
        assertEquals((await settle(sms.id, "sent")).provider, "twilio");
        assertEquals(twilio.messages.map((m) => [m.to, m.body]), [["+15550002222", "Your code is 123456"]]);
        const push = await n.sendPush("fcm:device-token-1", "Title", "Hello");
        assertEquals(push.channel, "push");
        assertEquals((await settle(push.id, "sent")).provider, "fcm");
        assertEquals(fcm.state.sends, [{ token: "device-token-1", title: "Title", body: "Hello" }]);
      } finally {
        await Promise.all([twilio.close(), fcm.close()]);
      }
    });

    await t.step(
      "retry, admin listAttempts, listDeadLetters, retryDeadLetter, listProviderLogs",
      async () => {
        const failing = await n.sendWebhook(`${hook}/fail`, "x", "payload");
        await settle(failing.id, "dead_lettered");
        const attempts = await n.admin.listAttempts(failing.id);
        assertEquals(attempts.length, 1);
        assertEquals((await n.admin.listDeadLetters({ channel: "webhook" })).map((x) => x.id), [failing.id]);
        assertEquals((await n.admin.retryDeadLetter(failing.id)).status, "queued");
        await settle(failing.id, "dead_lettered");
        assertEquals((await n.retry(failing.id)).status, "queued");
        await settle(failing.id, "dead_lettered");
        const logs = await n.admin.listProviderLogs({ channel: "webhook", status: "error" });
        assert(logs.length >= 3);
        const sentOne = (await n.list({ status: "delivered", limit: 1 }))[0]!;
        assertEquals([(await rejects(() => n.retry(sentOne.id))).status], [409]);
        assertEquals((await rejects(() => n.admin.retryDeadLetter(sentOne.id))).status, 409);
        assertEquals((await rejects(() => n.admin.listAttempts("not-an-id"))).status, 400);
        assertEquals((await rejects(() => n.admin.listDeadLetters({ limit: 0 }))).status, 400);
        assertEquals((await rejects(() => n.admin.listProviderLogs({ limit: 0 }))).status, 400);
      },
    );

    await t.step("admin getStats, getQueue, listEvents", async () => {
      const stats = await n.admin.getStats({ window: "1h", channel: "webhook" });
      assert(stats);
      assert(await n.admin.getQueue());
      assertEquals(await n.admin.listEvents({ status: "matched" }), []);
      // Events come from the rules engine's input (a server's POST, not a client operation).
      const ingest = await fetch(`${s.url}/v1/notifications/events`, {
        method: "POST",
        headers: { apikey: s.p.secretKey, "content-type": "application/json" },
        body: JSON.stringify({ type: "order.created", data: { id: 1 } }),
      });
      assertEquals(ingest.status, 200);
      const ingested = (await ingest.json()).data;
      const events = await n.admin.listEvents({ limit: 10 });
      assertEquals(events.map((e) => [e.id, e.type]), [[ingested.id, "order.created"]]);
      assertEquals((await rejects(() => n.admin.getStats({ window: "2y" as "1h" }))).status, 400);
      assertEquals((await rejects(() => n.admin.listEvents({ limit: 0 }))).status, 400);
      const anon = createClient(s.url, s.p.publicKey);
      assertEquals((await rejects(() => anon.notifications.admin.getQueue())).status, 403);
      anon.close();
    });

    await t.step("templates: create, list, get, update, preview, delete", async () => {
      const template = await n.createTemplate({
        name: "welcome",
        channel: "email",
        subject: "Hi {{ name }}",
        body: "Welcome, {{ name }}",
      });
      // The resource's definition lists project_id, which the platform does not return: a known gap.
      assertEquals(sorted(Object.keys(template)), sorted(TEMPLATE.filter((k) => k !== "project_id")));
      assertEquals((await n.listTemplates()).map((x) => x.id), [template.id]);
      assertEquals((await n.getTemplate(template.id)).name, "welcome");
      assertEquals(
        (await n.updateTemplate(template.id, { body: "Hello, {{ name }}" })).body,
        "Hello, {{ name }}",
      );
      const preview = await n.admin.previewTemplate(template.id, { name: "Ada" });
      assertEquals([preview.subject, preview.body], ["Hi Ada", "Hello, Ada"]);
      const viaTemplate = await n.send("email", "ada@example.com", undefined, {
        templateId: template.id,
        variables: { name: "Ada" },
      });
      assertEquals(viaTemplate.template_id, template.id);
      const taken = await rejects(() =>
        n.createTemplate({ name: "welcome", channel: "email", subject: null, body: "x" })
      );
      assertEquals([taken.status, taken.code], [409, "CONFLICT"]);
      assertEquals(await n.deleteTemplate(template.id), null);
      assertEquals((await rejects(() => n.getTemplate(template.id))).status, 404);
      assertEquals((await rejects(() => n.updateTemplate(template.id, { body: "x" }))).status, 404);
      assertEquals((await rejects(() => n.deleteTemplate(template.id))).status, 404);
      const anon = createClient(s.url, s.p.publicKey);
      assertEquals((await rejects(() => anon.notifications.listTemplates())).status, 403);
      anon.close();
      assertEquals((await rejects(() => n.admin.previewTemplate(template.id))).status, 404);
    });

    await t.step("admin rules: create, list, get, update, delete", async () => {
      const rule = await n.admin.createRule({
        name: "big orders",
        trigger_type: "order.paid",
        condition: "event.data.total > 100",
        channel: "webhook",
        recipient_expr: `"${hook}/ok"`,
        body: "big order",
      });
      assertEquals(sorted(Object.keys(rule)), sorted(RULE));
      assertEquals((await n.admin.listRules()).map((r) => r.id), [rule.id]);
      assertEquals((await n.admin.getRule(rule.id)).name, "big orders");
      assertEquals((await n.admin.updateRule(rule.id, { enabled: false })).enabled, false);
      assertEquals(await n.admin.deleteRule(rule.id), null);
      const bad = await rejects(() =>
        n.admin.createRule({ ...rule, name: "bad", condition: "event.data.total >", id: undefined } as never)
      );
      assertEquals(bad.status, 400);
      assertEquals((await rejects(() => n.admin.getRule(rule.id))).status, 404);
      assertEquals((await rejects(() => n.admin.updateRule(rule.id, { enabled: true }))).status, 404);
      assertEquals((await rejects(() => n.admin.deleteRule(rule.id))).status, 404);
      assertEquals(
        (await rejects(() => createClient(s.url, s.p.publicKey).notifications.admin.listRules())).status,
        403,
      );
    });
  } finally {
    admin.close();
    await s.close();
    await receiver.shutdown();
  }
});
