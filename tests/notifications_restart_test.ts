import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, makeSandbox, spawnPlatform, startPlatform } from "./harness.ts";
import { webhookReceiver } from "./notification_fakes.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

/** Counts how many times each id was received. */
function counts(ids: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("notifications survive a restart: all sent, none twice", async (t) => {
  const delays: Record<string, number> = { "/b": 250 };
  const hook = webhookReceiver(SECRET, {}, delays);
  const env = { NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1" };
  try {
    await t.step("queued while no dispatcher runs, delivered after the restart", async () => {
      const first = await startPlatform(env); // no workers: messages wait in KV
      const sandbox = first.sandbox;
      const ids: string[] = [];
      try {
        const headers = { apikey: first.secretKey };
        await first.fetch("/v1/notifications/settings", {
          method: "PATCH",
          headers,
          json: { webhook: { secret: SECRET } },
        });
        for (let i = 0; i < 30; i++) {
          const { body } = await json(
            await first.fetch("/v1/notifications/send", {
              method: "POST",
              headers,
              json: { channel: "webhook", recipient: `${hook.url}/a`, event: "e", payload: { i } },
            }),
          );
          ids.push(body.data.id);
        }
        const queue = await json(await first.fetch("/v1/notifications/queue", { headers }));
        assertEquals(queue.body.data.by_status.queued, 30);
      } finally {
        await first.close({ keepSandbox: true });
      }
      assertEquals(hook.received.length, 0);
      const second = await startPlatform(env, { sandbox, workers: true });
      try {
        await waitUntil("30 webhooks", () => hook.received.filter((r) => r.path === "/a").length >= 30);
        await new Promise((r) => setTimeout(r, 300)); // a duplicate would arrive now
        const got = counts(hook.received.filter((r) => r.path === "/a").map((r) => r.id));
        assertEquals([...got.keys()].sort(), [...ids].sort());
        assert([...got.values()].every((n) => n === 1), "no notification was sent twice");
        const list = await json(
          await second.fetch("/v1/notifications?status=delivered&limit=500", {
            headers: { apikey: second.secretKey },
          }),
        );
        assertEquals(list.body.data.length, 30);
      } finally {
        await second.close();
      }
    });

    await t.step("a SIGTERM mid-flight in main.ts: the rest are delivered by the next process", async () => {
      // Two attempts at a time against a receiver that takes 250 ms: most are still queued at SIGTERM.
      const sandbox = await makeSandbox({ ...env, NOTIFY_CONCURRENCY: "2" });
      const ids: string[] = [];
      try {
        const one = await spawnPlatform(sandbox.env);
        const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
        try {
          await fetch(`${one.url}/v1/notifications/settings`, {
            method: "PATCH",
            headers,
            body: JSON.stringify({ webhook: { secret: SECRET } }),
          }).then((r) => r.body?.cancel());
          const sends = [];
          for (let i = 0; i < 60; i++) {
            sends.push(
              fetch(`${one.url}/v1/notifications/send`, {
                method: "POST",
                headers,
                body: JSON.stringify({
                  channel: "webhook",
                  recipient: `${hook.url}/b`,
                  event: "e",
                  payload: { i },
                }),
              }).then((r) => r.json() as Promise<Json>),
            );
          }
          for (const body of await Promise.all(sends)) ids.push(body.data.id);
        } finally {
          const status = await one.stop("SIGTERM");
          assertEquals(status.code, 0);
        }
        const before = hook.received.filter((r) => r.path === "/b").length;
        delays["/b"] = 0;
        const two = await spawnPlatform(sandbox.env);
        try {
          await waitUntil("60 webhooks", () => hook.received.filter((r) => r.path === "/b").length >= 60);
          await new Promise((r) => setTimeout(r, 300));
          const got = counts(hook.received.filter((r) => r.path === "/b").map((r) => r.id));
          assertEquals([...got.keys()].sort(), [...ids].sort());
          assert([...got.values()].every((n) => n === 1), "no notification was sent twice");
          assert(before < 60, "some notifications were still queued when the first process stopped");
          assert(hook.peak.get("/b")! <= 2, "NOTIFY_CONCURRENCY=2 bounds the webhook attempts in flight");
        } finally {
          assertEquals((await two.stop("SIGTERM")).code, 0);
        }
      } finally {
        await sandbox.destroy();
      }
    });
  } finally {
    await hook.close();
  }
});
