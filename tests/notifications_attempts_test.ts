import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";
import { webhookReceiver } from "./notification_fakes.ts";
import { settle } from "./notification_settle.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

/** A port on 127.0.0.1 and ::1 that nothing listens on (bound, then closed). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("webhook attempts: one webhook-id for every attempt, and each failure says why", async (t) => {
  const hook = webhookReceiver(SECRET, { "/flaky": [500, 200] });
  const p = await startPlatform({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1,::1" }, { workers: true });
  const headers = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown) =>
    await json(await p.fetch(path, { method, headers, json: body }));
  const send = async (recipient: string) =>
    (await call("POST", "/v1/notifications/send", { channel: "webhook", recipient, event: "e", payload: {} }))
      .body.data.id as string;
  try {
    await call("PATCH", "/v1/notifications/settings", {
      webhook: { secret: SECRET },
      retry: { max_attempts: 2, base_delay_ms: 20 },
    });

    await t.step("500 then 200: both attempts carry the notification's id as webhook-id", async () => {
      const id = await send(`${hook.url}/flaky`);
      const done = await settle(p, id);
      assertEquals([done.status, done.attempts], ["delivered", 2]);
      const seen = hook.arrived.filter((a) => a.path === "/flaky");
      assertEquals(seen.map((a) => [a.id, a.status]), [[id, 500], [id, 200]]);
      const attempts = (await call("GET", `/v1/notifications/${id}/attempts`)).body.data;
      assertEquals(attempts.map((a: Json) => [a.attempt, a.outcome, a.http_status]), [
        [1, "retryable_error", 500],
        [2, "success", 200],
      ]);
      assertEquals(attempts[0].error, "webhook answered HTTP 500: nope", "the status and the answer's start");
    });

    await t.step("connection refused at every address of a name: the reason names the refusals", async () => {
      const id = await send(`http://localhost:${closedPort()}/hook`); // 127.0.0.1 and ::1
      const dead = await settle(p, id);
      assertEquals([dead.status, dead.attempts], ["dead_lettered", 2]);
      const attempts = (await call("GET", `/v1/notifications/${id}/attempts`)).body.data;
      assertEquals(attempts.length, 2);
      for (const a of attempts) {
        assertEquals(a.outcome, "retryable_error");
        assertMatch(a.error, /^webhook could not be reached: .*ECONNREFUSED/);
      }
      assertEquals(dead.last_error, attempts[1].error);
    });

    await t.step("a refused address: the reason says which policy refused it", async () => {
      const id = await send("http://[64:ff9b::7f00:1]/hook");
      const dead = await settle(p, id);
      const attempts = (await call("GET", `/v1/notifications/${id}/attempts`)).body.data;
      assertEquals(attempts.map((a: Json) => a.outcome), ["permanent_error"]);
      assertMatch(attempts[0].error, /private IPv4 address 127\.0\.0\.1/);
      assert(attempts.every((a: Json) => a.error.length > 0));
      assertEquals(dead.status, "dead_lettered");
    });
  } finally {
    await p.close();
    await hook.close();
  }
});
