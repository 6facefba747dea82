import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type ChildPlatform, type Json, json, makeSandbox, spawnPlatform } from "./harness.ts";
import { webhookReceiver } from "./notification_fakes.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;
const SENDS = 300;
const CONCURRENCY = 64;

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("a burst of webhooks (batched writes, claims and finishes), kill -9: each delivered, under its own id", async () => {
  // The receiver holds each request long enough for the kill to find several in flight.
  const delays: Record<string, number> = { "/hook": 1000 };
  const hook = webhookReceiver(SECRET, {}, delays);
  const sandbox = await makeSandbox({
    NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
    NOTIFY_CONCURRENCY: String(CONCURRENCY),
    NOTIFY_LEASE_SECS: "2",
    NOTIFY_SWEEP_SECS: "1",
  });
  const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
  const call = async (child: ChildPlatform, method: string, path: string, body?: unknown) =>
    await json(
      await fetch(`${child.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  let child: ChildPlatform | null = await spawnPlatform(sandbox.env);
  try {
    await call(child, "PATCH", "/v1/notifications/settings", { webhook: { secret: SECRET } });
    // All at once: the sends share transactions, and their attempts share claims and finishes.
    const sent = await Promise.all(
      Array.from({ length: SENDS }, (_, i) =>
        call(child!, "POST", "/v1/notifications/send", {
          channel: "webhook",
          recipient: `${hook.url}/hook`,
          event: "e",
          payload: { i },
        })),
    );
    for (const res of sent) assertEquals(res.status, 200, JSON.stringify(res.body));
    const ids: string[] = sent.map((res) => res.body.data.id);
    assertEquals(new Set(ids).size, SENDS, "each request made its own notification");
    await waitUntil("answered webhooks and others in flight", () => {
      const answered = hook.arrived.filter((a) => a.status !== 0).length;
      return answered >= 64 && (hook.active.get("/hook") ?? 0) > 0;
    }, 60_000);
    const status = await child.stop("SIGKILL");
    assertEquals(status.signal, "SIGKILL");
    child = null;
    // Those held by the receiver when the process died: received, never recorded as delivered.
    const cut = hook.arrived.filter((a) => a.status === 0).map((a) => a.id);
    assert(cut.length > 0, "some webhooks were in flight at the kill");
    delays["/hook"] = 0;

    child = await spawnPlatform(sandbox.env);
    const c = child;
    let list: Json[] = [];
    // Well under the 5 minutes a stuck send used to wait: the takeover follows the 2 s lease.
    await waitUntil("every notification delivered", async () => {
      list = (await call(c, "GET", "/v1/notifications?limit=500")).body.data;
      return list.length === SENDS && list.every((n) => n.status === "delivered");
    }, 90_000);

    // The receiver deduplicates by webhook-id: each notification counts once, whatever was sent twice.
    const byId = new Map<string, unknown[]>();
    for (const a of hook.arrived) byId.set(a.id, [...(byId.get(a.id) ?? []), a.data]);
    assertEquals([...byId.keys()].sort(), [...ids].sort(), "every notification arrived, under its own id");
    for (const [id, copies] of byId) {
      // A copy is the same message: same id, same payload (the id names the notification, not the attempt).
      assert(copies.every((d) => JSON.stringify(d) === JSON.stringify(copies[0])), id);
      assertEquals(copies[0], { i: ids.indexOf(id) });
    }
    for (const id of cut) assert(byId.get(id)!.length >= 2, `${id} was cut at the kill and sent again`);

    // The send the kill cut short is an attempt of its own, with its reason; the next one delivered.
    for (const id of cut) {
      const attempts = (await call(c, "GET", `/v1/notifications/${id}/attempts`)).body.data as Json[];
      const lost = attempts.filter((a) => a.outcome !== "success");
      assert(lost.length >= 1, id);
      for (const a of lost) {
        assertMatch(a.error, /did not finish: the process sending it stopped \(lease expired\)/);
      }
      assertEquals(attempts.at(-1)!.outcome, "success");
    }
  } finally {
    await child?.stop();
    await hook.close();
    await sandbox.destroy();
  }
});
