import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, rawRequest, startPlatform } from "./harness.ts";
import {
  fakeApns,
  fakeFcm,
  fakeTwilio,
  signTwilio,
  smtpSink,
  webhookReceiver,
} from "./notification_fakes.ts";
import { settle } from "./notification_settle.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

Deno.test("notifications: providers, retries, DLQ, templates, rules, quotas, lists and stats", async (t) => {
  const p = await startPlatform({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1" }, { workers: true });
  const hook = webhookReceiver(SECRET, {
    "/flaky": [500, 200],
    "/gone": [410],
    "/gone-once": [410, 200],
    "/down": [500],
    "/busy": [503, 200],
    "/slow-down": [429, 200],
  });
  const smtp = await smtpSink();
  const twilio = fakeTwilio("AC123", "twilio-token");
  const fcm = await fakeFcm("demo-app");
  const apns = await fakeApns("TEAM123456", "KEY1234567", "com.example.app");
  // The platform on a real socket too, for the calls Twilio makes to it.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, p.handler);
  const port = server.addr.port;
  const statusCallback = `http://127.0.0.1:${port}/v1/notifications/providers/sms/status`;
  const svc = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = svc) =>
    await json(await p.fetch(path, { method, headers, json: body }));
  const send = (body: unknown) => call("POST", "/v1/notifications/send", body);
  const webhook = (path: string, extra: Record<string, unknown> = {}) =>
    send({
      channel: "webhook",
      recipient: `${hook.url}${path}`,
      event: "order.paid",
      payload: { n: 1 },
      ...extra,
    });

  try {
    await t.step("every notifications route is in the OpenAPI document", async () => {
      const doc = await (await p.fetch("/v1/openapi.json")).json();
      const paths = Object.keys(doc.paths).filter((k) => k.startsWith("/v1/notifications"));
      assertEquals(paths.length, 19);
      assertEquals(doc.paths["/v1/notifications/providers/sms/status"].post.security, []);
      assert(doc.paths["/v1/notifications/send/batch"].post && doc.paths["/v1/notifications/settings"].patch);
    });

    await t.step("only service_role and admin may call", async () => {
      const anon = await call("GET", "/v1/notifications", undefined, { apikey: p.publicKey });
      assertEquals(anon.status, 403);
      assertEquals(anon.body.error.code, "FORBIDDEN");
      assertEquals((await call("GET", "/v1/notifications", undefined, {})).status, 401);
      const admin = await call("GET", "/v1/notifications", undefined, {
        authorization: `Bearer ${await p.adminToken()}`,
      });
      assertEquals(admin.status, 200);
      const { body } = await call("POST", "/v1/sql", {
        query: "select has_schema_privilege('anon', 'notifications', 'usage') as anon, " +
          "has_schema_privilege('authenticated', 'notifications', 'usage') as authenticated",
      });
      assertEquals(body.data, [{ anon: false, authenticated: false }]);
    });

    await t.step("settings: secrets are write-only, encrypted, and unknown fields are refused", async () => {
      const patch = {
        email: { host: "127.0.0.1", port: smtp.port, secure: false, from: "noreply@example.com" },
        sms: { base_url: twilio.url, account_sid: "AC123", auth_token: "twilio-token", from: "+15550001111" },
        push: {
          fcm: { base_url: fcm.url, token_url: `${fcm.url}/token`, service_account: fcm.serviceAccount },
          apns: {
            base_url: apns.url,
            team_id: "TEAM123456",
            key_id: "KEY1234567",
            private_key: apns.privatePem,
            topic: "com.example.app",
          },
        },
        webhook: { secret: SECRET, timeout_ms: 5000 },
        retry: { max_attempts: 3, base_delay_ms: 20 },
      };
      const { status, body } = await call("PATCH", "/v1/notifications/settings", patch);
      assertEquals(status, 200);
      assertEquals(body.data.webhook, { timeout_ms: 5000, secret_set: true });
      assertEquals(body.data.push.apns.private_key_set, true);
      assertEquals(body.data.push.fcm.service_account_set, true);
      assertEquals(body.data.sms.auth_token_set, true);
      assertEquals(body.data.email.pass_set, false);
      assertEquals(body.data.retry, { max_attempts: 3, base_delay_ms: 20 });
      const text = JSON.stringify((await call("GET", "/v1/notifications/settings")).body);
      assert(!text.includes("twilio-token") && !text.includes("PRIVATE KEY") && !text.includes(SECRET));
      // The stored row, read straight from the database (the owner's SQL may not read the platform's schemas).
      const stored = await p.internalSql("select public::text, secrets from notifications.settings");
      assertEquals(stored.length, 1);
      const row = JSON.stringify(stored);
      assert(!row.includes("twilio-token") && !row.includes(SECRET) && !row.includes("PRIVATE KEY"));
      const bad = await call("PATCH", "/v1/notifications/settings", { webhook: { secret: "x", colour: 1 } });
      assertEquals(bad.status, 400);
      assertEquals(bad.body.error.code, "VALIDATION_ERROR");
      const notBase64 = await call("PATCH", "/v1/notifications/settings", {
        webhook: { secret: "whsec_abcdefghijklmnopq" },
      });
      assertEquals(notBase64.status, 400);
      const badAccount = await call("PATCH", "/v1/notifications/settings", {
        push: { fcm: { service_account: '{"client_email": 1}' } },
      });
      assertEquals(badAccount.status, 400);
      const after = (await call("GET", "/v1/notifications/settings")).body.data;
      assertEquals([after.webhook.secret_set, after.push.fcm.service_account_set], [true, true]);
    });

    await t.step("webhook: signed per Standard Webhooks, attempt and provider log kept", async () => {
      const { status, body } = await webhook("/ok", { metadata: { order: 7 } });
      assertEquals(status, 200);
      assertEquals(body.data.status, "queued");
      const done = await settle(p, body.data.id);
      // The receiver is the final recipient: its 2xx confirms delivery, so both timestamps are set.
      assertEquals(done.status, "delivered");
      assert(done.sending_at && done.sent_at && done.queued_at && done.delivered_at);
      assertEquals(done.delivered_at, done.sent_at);
      const got = hook.received.filter((r) => r.id === body.data.id);
      assertEquals(got.length, 1);
      assertEquals(got[0]!.body.type, "order.paid");
      assertEquals(got[0]!.body.data, { n: 1 });
      const attempts = await call("GET", `/v1/notifications/${body.data.id}/attempts`);
      assertEquals(attempts.body.data.length, 1);
      assertEquals(attempts.body.data[0].outcome, "success");
      assertEquals(attempts.body.data[0].http_status, 200);
      const logs = await call("GET", "/v1/notifications/providers/logs?channel=webhook&status=success");
      assert(
        logs.body.data.some((l: Json) => l.notification_id === body.data.id && l.request.signed === true),
      );
    });

    await t.step("retry after a 500, then success", async () => {
      const { body } = await webhook("/flaky");
      const done = await settle(p, body.data.id);
      assertEquals(done.status, "delivered");
      assertEquals(done.attempts, 2);
      assert(done.failed_at, "the failed transition is timestamped");
      const attempts = (await call("GET", `/v1/notifications/${body.data.id}/attempts`)).body.data;
      assertEquals(attempts.map((a: Json) => [a.outcome, a.http_status]), [["retryable_error", 500], [
        "success",
        200,
      ]]);
    });

    await t.step("503 with Retry-After is retried", async () => {
      const { body } = await webhook("/busy");
      const done = await settle(p, body.data.id);
      assertEquals([done.status, done.attempts], ["delivered", 2]);
    });

    await t.step("429 waits at least its Retry-After before the next attempt", async () => {
      const { body } = await webhook("/slow-down");
      const done = await settle(p, body.data.id);
      assertEquals([done.status, done.attempts], ["delivered", 2]);
      const attempts = (await call("GET", `/v1/notifications/${body.data.id}/attempts`)).body.data;
      assertEquals([attempts[0].http_status, attempts[0].retry_after_ms], [429, 1000]);
      const gap = new Date(attempts[1].started_at).getTime() - new Date(attempts[0].finished_at).getTime();
      assert(gap >= 990, `the retry waited ${gap} ms`);
    });

    await t.step("retries run out → dead_lettered", async () => {
      const { body } = await webhook("/down");
      const done = await settle(p, body.data.id);
      assertEquals([done.status, done.attempts], ["dead_lettered", 3]);
      assert(done.dead_lettered_at);
    });

    let deadId = "";
    await t.step("permanent failure (410) goes straight to the DLQ; retry from the DLQ", async () => {
      const { body } = await webhook("/gone-once");
      deadId = body.data.id;
      const done = await settle(p, deadId);
      assertEquals([done.status, done.attempts], ["dead_lettered", 1]);
      const dlq = await call("GET", "/v1/notifications/dead-letters?channel=webhook&search=gone-once");
      assertEquals(dlq.body.data.map((n: Json) => n.id), [deadId]);
      const retried = await call("POST", `/v1/notifications/dead-letters/${deadId}/retry`);
      assertEquals(retried.status, 200);
      assertEquals(retried.body.data.status, "queued");
      const again = await settle(p, deadId);
      assertEquals([again.status, again.attempts], ["delivered", 2]);
      const history = (await call("GET", `/v1/notifications/${deadId}/attempts`)).body.data;
      assertEquals(history.map((a: Json) => [a.attempt, a.outcome, a.http_status]), [
        [1, "permanent_error", 410],
        [2, "success", 200],
      ]);
      const conflict = await call("POST", `/v1/notifications/${deadId}/retry`);
      assertEquals(conflict.status, 409);
      assertEquals(conflict.body.error.code, "CONFLICT");
      assertEquals((await call("POST", `/v1/notifications/dead-letters/${deadId}/retry`)).status, 409);
      assertEquals((await call("POST", `/v1/notifications/${crypto.randomUUID()}/retry`)).status, 404);
    });

    await t.step("retry of a failed-for-good notification by id", async () => {
      const { body } = await webhook("/gone");
      await settle(p, body.data.id);
      const retried = await call("POST", `/v1/notifications/${body.data.id}/retry`);
      assertEquals([retried.status, retried.body.data.status], [200, "queued"]);
      const done = await settle(p, body.data.id);
      assertEquals(done.status, "dead_lettered");
      assertEquals(hook.hits.get("/gone"), 2);
    });

    await t.step("idempotent double send returns the first notification and sends once", async () => {
      const key = `order-${crypto.randomUUID()}`;
      const first = await webhook("/idem", { idempotencyKey: key });
      const second = await webhook("/idem", { idempotencyKey: key });
      assertEquals(second.body.data.id, first.body.data.id);
      await settle(p, first.body.data.id);
      await new Promise((r) => setTimeout(r, 100));
      assertEquals(hook.received.filter((r) => r.path === "/idem").length, 1);
    });

    await t.step("batch: a bad item does not sink the batch", async () => {
      const { status, body } = await call("POST", "/v1/notifications/send/batch", {
        requests: [
          { channel: "webhook", recipient: `${hook.url}/batch`, event: "a", payload: "one" },
          { channel: "fax", recipient: "x", body: "no" },
          { channel: "sms", recipient: "not-a-number", body: "no" },
          { channel: "webhook", recipient: `${hook.url}/batch`, event: "b", payload: { two: 2 } },
        ],
      });
      assertEquals(status, 200);
      const results = body.data.results;
      assertEquals(results.map((r: Json) => r.index), [0, 1, 2, 3]);
      assertEquals([!!results[0].notification, !!results[3].notification], [true, true]);
      assertEquals([results[1].error.code, results[2].error.code], ["VALIDATION_ERROR", "VALIDATION_ERROR"]);
      assertMatch(results[2].error.message, /E\.164/);
      await settle(p, results[3].notification.id);
      assertEquals((await call("POST", "/v1/notifications/send/batch", { requests: [] })).status, 400);
    });

    let templateId = "";
    await t.step(
      "templates: exact fields, update rules, preview with variables present or missing",
      async () => {
        const create = await call("POST", "/v1/notifications/templates", {
          name: "welcome",
          channel: "email",
          subject: "Welcome {{ user.name }}",
          body: "Hello {{ user.name }}, your code is {{ code }}.",
        });
        assertEquals(create.status, 201);
        templateId = create.body.data.id;
        const extra = await call("POST", "/v1/notifications/templates", {
          name: "x",
          channel: "email",
          subject: "s",
          body: "b",
          colour: "red",
        });
        assertEquals(extra.status, 400);
        const dup = await call("POST", "/v1/notifications/templates", {
          name: "welcome",
          channel: "sms",
          subject: null,
          body: "b",
        });
        assertEquals(dup.status, 409);
        const badChannel = await call("PATCH", `/v1/notifications/templates/${templateId}`, {
          channel: "sms",
        });
        assertEquals(badChannel.status, 400);
        const renamed = await call("PATCH", `/v1/notifications/templates/${templateId}`, {
          name: "welcome-2",
        });
        assertEquals([renamed.body.data.name, renamed.body.data.subject], [
          "welcome-2",
          "Welcome {{ user.name }}",
        ]);
        const preview = await call("POST", `/v1/notifications/templates/${templateId}/preview`, {
          variables: { user: { name: "Ada" }, code: 42 },
        });
        assertEquals(preview.status, 200);
        assertEquals(preview.body.data.subject, "Welcome Ada");
        assertEquals(preview.body.data.body, "Hello Ada, your code is 42.");
        const missing = await call("POST", `/v1/notifications/templates/${templateId}/preview`, {
          variables: { user: { name: "Ada" } },
        });
        assertEquals(missing.status, 400);
        assertMatch(missing.body.error.message, /code/);
      },
    );

    await t.step("templates that loop forever or read prototypes are refused or bounded", async () => {
      for (const body of ["{% for i in (1..1000000000) %}x{% endfor %}", "{{ user.constructor.name }}"]) {
        const t1 = await call("POST", "/v1/notifications/templates", {
          name: `hostile-${crypto.randomUUID()}`,
          channel: "sms",
          subject: null,
          body,
        });
        assertEquals(t1.status, 201);
        const preview = await call("POST", `/v1/notifications/templates/${t1.body.data.id}/preview`, {
          variables: { user: { name: "x" } },
        });
        assertEquals(preview.status, 400);
        assertEquals(preview.body.error.code, "VALIDATION_ERROR");
      }
    });

    await t.step("email through the SMTP sink with a rendered template", async () => {
      const { body } = await send({
        channel: "email",
        recipient: "ada@example.com",
        templateId,
        variables: { user: { name: "Ada" }, code: 7 },
      });
      assertEquals(body.data.subject, "Welcome Ada");
      const done = await settle(p, body.data.id);
      assertEquals(done.status, "sent");
      assertEquals(done.provider, "smtp");
      const mail = smtp.mails.find((m) => m.raw.includes(body.data.id));
      assert(mail, "the sink received the message");
      assertEquals(mail.to, ["ada@example.com"]);
      assertEquals(mail.from, "noreply@example.com");
      assertMatch(mail.raw, /Subject: Welcome Ada/);
      assertMatch(mail.raw, /Hello Ada, your code is 7\./);
      const missing = await send({
        channel: "email",
        recipient: "ada@example.com",
        templateId,
        variables: {},
      });
      assertEquals(missing.status, 400);
    });

    await t.step("SMS through a Twilio-compatible API; an invalid number is permanent", async () => {
      const ok = await send({
        channel: "sms",
        recipient: "+15551234567",
        body: "Code {{ c }}",
        variables: { c: 9 },
      });
      const done = await settle(p, ok.body.data.id);
      assertEquals([done.status, done.provider], ["sent", "twilio"]);
      assertEquals(done.provider_message_id, twilio.messages[0]!.sid);
      assertEquals(twilio.messages[0]!.statusCallback, null); // no status_callback_url configured yet
      const { to, from, body } = twilio.messages[0]!;
      assertEquals({ to, from, body }, { to: "+15551234567", from: "+15550001111", body: "Code 9" });
      const bad = await send({ channel: "sms", recipient: "+15550000000", body: "x" });
      const dead = await settle(p, bad.body.data.id);
      assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
    });

    await t.step(
      "SMS delivery receipts: Twilio's signed status callback moves sent → delivered",
      async () => {
        const patched = await call("PATCH", "/v1/notifications/settings", {
          sms: { status_callback_url: statusCallback },
        });
        assertEquals(patched.body.data.sms.status_callback_url, statusCallback);
        const { body } = await send({ channel: "sms", recipient: "+15551230001", body: "Your code is 1" });
        const id = body.data.id;
        const sent = await settle(p, id);
        assertEquals(sent.status, "sent");
        const message = twilio.messages.find((m) => m.sid === sent.provider_message_id)!;
        assertEquals(message.statusCallback, statusCallback);
        const receipts = async () =>
          (await call("GET", "/v1/notifications/providers/logs?channel=sms&limit=500")).body.data
            .filter((l: Json) => l.notification_id === id && l.kind === "receipt");
        const now = async () => (await call("GET", `/v1/notifications/${id}`)).body.data;

        // An intermediate status is recorded and changes nothing.
        const progress = await twilio.report(message.sid, "sent");
        assertEquals(progress.status, 200);
        assertEquals(progress.body.data, {
          notification_id: id,
          status: "sent",
          recorded: true,
          changed: false,
        });

        // A missing, tampered, foreign-token or wrong-URL signature is refused and changes nothing.
        const missing = await twilio.report(message.sid, "delivered", { signature: "" });
        assertEquals([missing.status, missing.body.error.code], [401, "UNAUTHORIZED"]);
        const tampered = await twilio.report(message.sid, "undelivered", {
          tamper: (params) => params.set("MessageStatus", "delivered"),
        });
        assertEquals([tampered.status, tampered.body.error.code], [403, "FORBIDDEN"]);
        const { params } = twilio.callback(message.sid, "delivered");
        const foreign = await twilio.report(message.sid, "delivered", {
          signature: signTwilio("another-token", statusCallback, params),
        });
        assertEquals(foreign.status, 403);
        const otherUrl = await twilio.report(message.sid, "delivered", {
          signature: signTwilio("twilio-token", `${statusCallback}?x=1`, params),
        });
        assertEquals(otherUrl.status, 403);
        assertEquals((await now()).status, "sent");
        assertEquals((await receipts()).length, 1);

        // The genuine callback: delivered, timestamped after sent.
        const delivered = await twilio.report(message.sid, "delivered");
        assertEquals(delivered.status, 200);
        assertEquals(delivered.body.data, {
          notification_id: id,
          status: "delivered",
          recorded: true,
          changed: true,
        });
        const after = await now();
        assertEquals(after.status, "delivered");
        assert(new Date(after.delivered_at) >= new Date(after.sent_at));

        // A replay (same request, same signature) changes nothing a second time.
        const replay = await twilio.report(message.sid, "delivered");
        assertEquals(replay.body.data, {
          notification_id: id,
          status: "delivered",
          recorded: false,
          changed: false,
        });
        assertEquals((await now()).delivered_at, after.delivered_at);
        // Late or contradictory reports never move it backwards.
        for (const late of ["queued", "sending", "undelivered"]) {
          const r = await twilio.report(message.sid, late);
          assertEquals([r.status, r.body.data.status, r.body.data.changed], [200, "delivered", false], late);
        }
        assertEquals((await now()).status, "delivered");
        const logged = await receipts();
        assertEquals(logged.map((l: Json) => l.request.status).sort(), [
          "delivered",
          "queued",
          "sending",
          "sent",
          "undelivered",
        ]);
        assertEquals((await call("GET", `/v1/notifications/${id}/attempts`)).body.data.length, 1);

        // A signed callback for a message this project never sent.
        const unknown = await twilio.report(message.sid, "delivered", {
          extra: {
            MessageSid: "SMffffffffffffffffffffffffffffffff",
            SmsSid: "SMffffffffffffffffffffffffffffffff",
          },
        });
        assertEquals([unknown.status, unknown.body.error.code], [404, "NOT_FOUND"]);

        // An API key is no substitute for the signature.
        const keyOnly = await call("POST", "/v1/notifications/providers/sms/status", undefined, svc);
        assertEquals(keyOnly.status, 400); // not a form body
        const keyForm = await p.fetch("/v1/notifications/providers/sms/status", {
          method: "POST",
          headers: { ...svc, "content-type": "application/x-www-form-urlencoded" },
          body: params.toString(),
        });
        assertEquals(keyForm.status, 401);
      },
    );

    await t.step(
      "SMS delivery receipts: undelivered dead-letters it with the reason; retry resends",
      async () => {
        const { body } = await send({ channel: "sms", recipient: "+15551230002", body: "Your code is 2" });
        const id = body.data.id;
        const sent = await settle(p, id);
        const failed = await twilio.report(sent.provider_message_id, "undelivered", {
          extra: { ErrorCode: "30003" },
        });
        assertEquals(failed.body.data, {
          notification_id: id,
          status: "dead_lettered",
          recorded: true,
          changed: true,
        });
        const dead = (await call("GET", `/v1/notifications/${id}`)).body.data;
        assertEquals(dead.status, "dead_lettered");
        assert(dead.dead_lettered_at && dead.failed_at);
        assertMatch(dead.last_error, /undelivered \(error 30003\)/);
        const attempts = (await call("GET", `/v1/notifications/${id}/attempts`)).body.data;
        assertEquals(attempts.map((a: Json) => [a.attempt, a.kind, a.outcome]), [
          [1, "send", "success"],
          [1, "receipt", "permanent_error"],
        ]);
        const dlq = (await call("GET", "/v1/notifications/dead-letters?channel=sms&limit=500")).body.data;
        assert(dlq.some((n: Json) => n.id === id));
        // A later "delivered" for the failed message does not revive it.
        const late = await twilio.report(sent.provider_message_id, "delivered");
        assertEquals([late.body.data.status, late.body.data.changed], ["dead_lettered", false]);
        // Retried from the DLQ it is sent again, as a new Twilio message, and can be confirmed.
        assertEquals((await call("POST", `/v1/notifications/dead-letters/${id}/retry`)).status, 200);
        const again = await settle(p, id);
        assertEquals(again.status, "sent");
        assert(again.provider_message_id !== sent.provider_message_id);
        const ok = await twilio.report(again.provider_message_id, "delivered");
        assertEquals(ok.body.data.status, "delivered");
        const listed =
          (await call("GET", "/v1/notifications?channel=sms&status=delivered&limit=500")).body.data;
        assert(listed.some((n: Json) => n.id === id));
      },
    );

    await t.step(
      "SMS delivery receipts: the project comes from the host; another project's URL fails",
      async () => {
        const admin = { authorization: `Bearer ${await p.adminToken()}` };
        const created = await call("POST", "/v1/admin/projects", { ref: "tenant2", name: "Tenant 2" }, admin);
        assertEquals(created.status, 201);
        const host = `tenant2.localhost:${port}`;
        const other = { apikey: created.body.data.secret_key, "content-type": "application/json" };
        // tenant2 uses the same Twilio account and its own callback URL.
        const patched = await rawRequest(port, {
          method: "PATCH",
          path: "/v1/notifications/settings",
          host,
          headers: other,
          body: JSON.stringify({
            sms: {
              account_sid: "AC123",
              auth_token: "twilio-token",
              from: "+15550001111",
              status_callback_url: `http://${host}/v1/notifications/providers/sms/status`,
            },
          }),
        });
        assertEquals(patched.status, 200);
        const { body } = await send({ channel: "sms", recipient: "+15551230003", body: "Your code is 3" });
        const sent = await settle(p, body.data.id);
        // The default project's genuine callback, replayed to tenant2's host: signed for another URL.
        const { params, signature } = twilio.callback(sent.provider_message_id, "delivered");
        const replayed = await rawRequest(port, {
          method: "POST",
          path: "/v1/notifications/providers/sms/status",
          host,
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
          body: params.toString(),
        });
        assertEquals(replayed.status, 403);
        // Signed for tenant2's URL, the message is still not tenant2's.
        const forTenant2 = await rawRequest(port, {
          method: "POST",
          path: "/v1/notifications/providers/sms/status",
          host,
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": signTwilio(
              "twilio-token",
              `http://${host}/v1/notifications/providers/sms/status`,
              params,
            ),
          },
          body: params.toString(),
        });
        assertEquals(forTenant2.status, 404);
        assertEquals((await call("GET", `/v1/notifications/${body.data.id}`)).body.data.status, "sent");
        // An unknown host is no project at all.
        const nowhere = await rawRequest(port, {
          method: "POST",
          path: "/v1/notifications/providers/sms/status",
          host: `nobody.localhost:${port}`,
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
          body: params.toString(),
        });
        assertEquals(nowhere.status, 404);
        assertMatch(nowhere.body, /PROJECT_NOT_FOUND/);
      },
    );

    await t.step(
      "FCM: service-account JWT exchanged once, token cached; UNREGISTERED is permanent",
      async () => {
        const a = await send({
          channel: "push",
          recipient: "fcm:device-token-aaaa",
          subject: "Hi",
          body: "One",
        });
        const b = await send({ channel: "push", recipient: "device-token-bbbb", body: "Two" });
        assertEquals((await settle(p, a.body.data.id)).status, "sent");
        assertEquals((await settle(p, b.body.data.id)).status, "sent");
        assertEquals(fcm.state.tokensIssued, 1);
        assertEquals(fcm.state.sends.map((s) => s.token).sort(), ["device-token-aaaa", "device-token-bbbb"]);
        const gone = await send({ channel: "push", recipient: "fcm:unregistered-token", body: "x" });
        const dead = await settle(p, gone.body.data.id);
        assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
      },
    );

    await t.step("APNs: ES256 provider token verified; BadDeviceToken is permanent", async () => {
      const ok = await send({ channel: "push", recipient: "apns:good-device-1", subject: "T", body: "B" });
      assertEquals((await settle(p, ok.body.data.id)).status, "sent");
      assertEquals(apns.pushes, [{ token: "good-device-1", alert: { title: "T", body: "B" } }]);
      assertEquals(apns.tokensSeen.size, 1);
      const bad = await send({ channel: "push", recipient: "apns:bad-device-1", body: "B" });
      const dead = await settle(p, bad.body.data.id);
      assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
      assertMatch(dead.last_error, /BadDeviceToken/);
    });

    await t.step("SSRF: private and link-local targets are refused without a request", async () => {
      for (const url of ["http://10.0.0.1/hook", "http://169.254.169.254/latest", "http://[::1]:1/x"]) {
        const { body } = await send({ channel: "webhook", recipient: url, event: "e", payload: {} });
        const dead = await settle(p, body.data.id);
        assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
        assertMatch(dead.last_error, /private or loopback/);
      }
    });

    await t.step("rules: invalid CEL is refused at save; match, no match and error", async () => {
      const invalid = await call("POST", "/v1/notifications/rules", {
        name: "bad",
        trigger_type: "order.paid",
        condition: "event.data.amount >",
        channel: "webhook",
        recipient_expr: "event.data.url",
      });
      assertEquals(invalid.status, 400);
      assertMatch(invalid.body.error.message, /condition is not a valid CEL expression/);
      const notBool = await call("POST", "/v1/notifications/rules", {
        name: "bad",
        trigger_type: "order.paid",
        condition: "'yes'",
        channel: "webhook",
        recipient_expr: "event.data.url",
      });
      assertEquals(notBool.status, 400);
      const rule = await call("POST", "/v1/notifications/rules", {
        name: "big orders",
        trigger_type: "order.paid",
        condition: "event.data.amount > 100",
        channel: "webhook",
        recipient_expr: "event.data.url",
      });
      assertEquals(rule.status, 201);
      assertEquals([rule.body.data.enabled, rule.body.data.delay_secs], [true, 0]);
      await call("POST", "/v1/notifications/rules", {
        name: "broken",
        trigger_type: "broken.event",
        condition: "event.data.missing > 1",
        channel: "webhook",
        recipient_expr: "event.data.url",
      });
      const url = `${hook.url}/rules`;
      const matched = await call("POST", "/v1/notifications/events", {
        type: "order.paid",
        data: { amount: 150, url },
      });
      assertEquals(matched.status, 200);
      assertEquals(matched.body.data.status, "enqueued");
      assert(matched.body.data.matched_at && matched.body.data.enqueued_at);
      assertEquals(matched.body.data.notification_ids.length, 1);
      const sent = await settle(p, matched.body.data.notification_ids[0]);
      assertEquals([sent.status, sent.rule_id, sent.event_id], [
        "delivered",
        rule.body.data.id,
        matched.body.data.id,
      ]);
      assertEquals(hook.received.filter((r) => r.path === "/rules")[0]!.body.data, { amount: 150, url });
      const ignored = await call("POST", "/v1/notifications/events", {
        type: "order.paid",
        data: { amount: 50, url },
      });
      assertEquals([ignored.body.data.status, ignored.body.data.notification_ids], ["ignored", []]);
      const failed = await call("POST", "/v1/notifications/events", { type: "broken.event", data: { url } });
      assertEquals(failed.body.data.status, "failed");
      assertMatch(failed.body.data.reason, /Rule "broken": condition failed: No such key: missing/);
      const events = await call("GET", "/v1/notifications/events?status=ignored");
      assertEquals(events.body.data.map((e: Json) => e.id), [ignored.body.data.id]);
      // Update changes only the fields given.
      const updated = await call("PATCH", `/v1/notifications/rules/${rule.body.data.id}`, { delay_secs: 1 });
      assertEquals([updated.body.data.delay_secs, updated.body.data.condition], [
        1,
        "event.data.amount > 100",
      ]);
      assertEquals(
        (await call("PATCH", `/v1/notifications/rules/${rule.body.data.id}`, { condition: "1 +" })).status,
        400,
      );
      const delayed = await call("POST", "/v1/notifications/events", {
        type: "order.paid",
        data: { amount: 500, url },
      });
      const id = delayed.body.data.notification_ids[0];
      const queued = (await call("GET", `/v1/notifications/${id}`)).body.data;
      assertEquals(queued.status, "queued");
      assert(new Date(queued.scheduled_at).getTime() - new Date(queued.created_at).getTime() >= 900);
      const later = await settle(p, id);
      assertEquals(later.status, "delivered");
      assert(
        new Date(later.sent_at).getTime() - new Date(later.created_at).getTime() >= 900,
        "the delay held",
      );
      assertEquals((await call("DELETE", `/v1/notifications/rules/${rule.body.data.id}`)).body, {
        data: null,
        meta: null,
      });
      assertEquals((await call("GET", `/v1/notifications/rules/${rule.body.data.id}`)).status, 404);
    });

    await t.step("quota reached → suppressed, nothing sent", async () => {
      const today = (await call("GET", "/v1/notifications?channel=sms&limit=500")).body.data
        .filter((n: Json) => n.status !== "suppressed").length;
      await call("PATCH", "/v1/notifications/settings", { quotas: { sms: today + 1 } });
      const one = await send({ channel: "sms", recipient: "+15551234568", body: "in quota" });
      const two = await send({ channel: "sms", recipient: "+15551234569", body: "over quota" });
      assertEquals(one.body.data.status, "queued");
      assertEquals(two.body.data.status, "suppressed");
      assert(two.body.data.suppressed_at);
      assertMatch(two.body.data.last_error, /Daily quota of \d+ sms/);
      await settle(p, one.body.data.id);
      await new Promise((r) => setTimeout(r, 100));
      assert(!twilio.messages.some((m) => m.to === "+15551234569"));
      await call("PATCH", "/v1/notifications/settings", { quotas: { sms: null } });
    });

    await t.step("list filters, search, sort and paging", async () => {
      const all = (await call("GET", "/v1/notifications?limit=500")).body.data;
      const sms = (await call("GET", "/v1/notifications?channel=sms&limit=500")).body.data;
      assertEquals(sms.length, all.filter((n: Json) => n.channel === "sms").length);
      assert(sms.length > 0 && sms.every((n: Json) => n.channel === "sms"));
      const dead = (await call("GET", "/v1/notifications?status=dead_lettered&limit=500")).body.data;
      assertEquals(dead.length, all.filter((n: Json) => n.status === "dead_lettered").length);
      const search = (await call("GET", "/v1/notifications?search=FLAKY")).body.data;
      assertEquals(search.length, 1);
      assertMatch(search[0].recipient, /\/flaky$/);
      const asc = (await call("GET", "/v1/notifications?sort=created_at&order=asc&limit=500")).body.data;
      assertEquals(asc.map((n: Json) => n.id), [...all].reverse().map((n: Json) => n.id));
      const byStatus = (await call("GET", "/v1/notifications?sort=status&order=asc&limit=500")).body.data;
      const statuses = byStatus.map((n: Json) => n.status);
      assertEquals(statuses, [...statuses].sort());
      const page = (await call("GET", "/v1/notifications?limit=3&offset=2")).body.data;
      assertEquals(page.map((n: Json) => n.id), all.slice(2, 5).map((n: Json) => n.id));
      for (
        const q of ["limit=0", "limit=501", "offset=-1", "sort=recipient", "status=lost", "order=up", "x=1"]
      ) {
        const bad = await call("GET", `/v1/notifications?${q}`);
        assertEquals(bad.status, 400, q);
      }
      assertEquals((await call("GET", "/v1/notifications/not-a-uuid")).status, 400);
      assertEquals((await call("GET", `/v1/notifications/${crypto.randomUUID()}`)).status, 404);
    });

    await t.step("stats and queue figures match what was sent", async () => {
      const all = (await call("GET", "/v1/notifications?limit=500")).body.data;
      const count = (s: string, c?: string) =>
        all.filter((n: Json) => n.status === s && (!c || n.channel === c)).length;
      const { body } = await call("GET", "/v1/notifications/stats?window=24h");
      assertEquals(body.data.total, all.length);
      assertEquals(body.data.by_status.sent, count("sent"));
      assertEquals(body.data.by_status.delivered, count("delivered"));
      assert(count("delivered") > 0 && count("sent") > 0);
      assertEquals(body.data.by_status.dead_lettered, count("dead_lettered"));
      assertEquals(body.data.by_status.suppressed, count("suppressed"));
      assert(body.data.queued_to_sent_ms.p50 !== null);
      const web = (await call("GET", "/v1/notifications/stats?window=1h&channel=webhook")).body.data;
      assertEquals(web.by_channel.webhook.sent, 0);
      assertEquals(web.by_channel.webhook.delivered, count("delivered", "webhook"));
      assertEquals(Object.keys(web.by_channel), ["webhook"]);
      assertEquals((await call("GET", "/v1/notifications/stats?window=2h")).status, 400);
      const queue = (await call("GET", "/v1/notifications/queue")).body.data;
      assertEquals(queue.depth, count("queued") + count("sending") + count("failed"));
      assertEquals(queue.depth, 0);
    });
  } finally {
    await server.shutdown();
    await p.close();
    await Promise.all([hook.close(), smtp.close(), twilio.close(), fcm.close(), apns.close()]);
  }
});
