import { encodeBase64 } from "../lib/encoding.ts";
import { assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";
import { smtpSink, webhookReceiver } from "./notification_fakes.ts";
import { settle } from "./notification_settle.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

Deno.test("notifications: a name that resolves to loopback is refused for webhooks and SMTP", async (t) => {
  // No NOTIFY_ALLOW_PRIVATE_NET: private targets are refused, whatever name they hide behind.
  const p = await startPlatform({}, { workers: true });
  const hook = webhookReceiver(SECRET);
  const smtp = await smtpSink();
  const headers = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown) =>
    await json(await p.fetch(path, { method, headers, json: body }));
  try {
    await call("PATCH", "/v1/notifications/settings", {
      email: { host: "localhost", port: smtp.port, secure: false, from: "noreply@example.com" },
      webhook: { secret: SECRET },
      retry: { max_attempts: 3, base_delay_ms: 20 },
    });

    await t.step("webhook to http://localhost:<port>: dead-lettered, nothing received", async () => {
      const port = new URL(hook.url).port;
      const { body } = await call("POST", "/v1/notifications/send", {
        channel: "webhook",
        recipient: `http://localhost:${port}/hook`,
        event: "e",
        payload: {},
      });
      const dead = await settle(p, body.data.id);
      assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
      assertMatch(dead.last_error, /localhost.*private or loopback/);
      assertEquals(hook.hits.size, 0);
    });

    await t.step("email through an SMTP host named localhost: dead-lettered, nothing received", async () => {
      const { body } = await call("POST", "/v1/notifications/send", {
        channel: "email",
        recipient: "ada@example.com",
        subject: "Hi",
        body: "Hello",
      });
      const dead = await settle(p, body.data.id);
      assertEquals([dead.status, dead.attempts, dead.provider], ["dead_lettered", 1, "smtp"]);
      assertMatch(dead.last_error, /private or loopback/);
      assertEquals(smtp.mails.length, 0);
      const attempts = (await call("GET", `/v1/notifications/${body.data.id}/attempts`)).body.data;
      assertEquals(attempts.map((a: Json) => a.outcome), ["permanent_error"]);
    });
  } finally {
    await p.close();
    await Promise.all([hook.close(), smtp.close()]);
  }
});

Deno.test("notifications: IPv6 forms of a loopback address are refused although 127.0.0.1 is allowed", async (t) => {
  // 127.0.0.1 is allowed, so the receiver is reachable; its NAT64, 6to4, IPv4-compatible and IPv4-translated
  // forms are other addresses, which the functions' egress policy refuses as well.
  const p = await startPlatform({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1" }, { workers: true });
  const hook = webhookReceiver(SECRET);
  const port = new URL(hook.url).port;
  const send = async (host: string) =>
    (await json(
      await p.fetch("/v1/notifications/send", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { channel: "webhook", recipient: `http://${host}:${port}/hook`, event: "e", payload: {} },
      }),
    )).body.data.id as string;
  try {
    await json(
      await p.fetch("/v1/notifications/settings", {
        method: "PATCH",
        headers: { apikey: p.secretKey },
        json: { webhook: { secret: SECRET }, retry: { max_attempts: 3, base_delay_ms: 20 } },
      }),
    );
    await t.step("the receiver itself is reachable", async () => {
      assertEquals((await settle(p, await send("127.0.0.1"))).status, "delivered");
    });
    for (const host of ["[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::7f00:1]", "[::ffff:0:7f00:1]"]) {
      await t.step(
        `${host}: dead-lettered at the first attempt with the reason, nothing received`,
        async () => {
          const before = hook.arrived.length;
          const dead = await settle(p, await send(host));
          assertEquals([dead.status, dead.attempts], ["dead_lettered", 1]);
          assertMatch(dead.last_error, /private or loopback address \(.+\)/);
          assertEquals(hook.arrived.length, before);
        },
      );
    }
  } finally {
    await p.close();
    await hook.close();
  }
});
