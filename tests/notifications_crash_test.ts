import { encodeBase64 } from "../lib/encoding.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { callChild, type ChildPlatform, type Json, makeSandbox, spawnPlatform } from "./harness.ts";
import { webhookReceiver } from "./notification_fakes.ts";

const SECRET = `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How a crash case runs: how many sends, how they are posted, and how many answered before the kill. */
interface CrashCase {
  sends: number;
  concurrency: number;
  /** Send every notification at once (they share batched writes, claims and finishes), else one by one. */
  burst: boolean;
  /** Webhooks answered before the kill (others still held by the receiver). */
  killAfter: number;
}

/** Sends webhooks, kills the platform with SIGKILL while some are in flight, restarts it, checks delivery. */
async function crashAndRedeliver(o: CrashCase): Promise<void> {
  // The receiver holds each request long enough for the kill to find several in flight.
  const delays: Record<string, number> = { "/hook": 1000 };
  const hook = webhookReceiver(SECRET, {}, delays);
  const sandbox = await makeSandbox({
    NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
    NOTIFY_CONCURRENCY: String(o.concurrency),
    NOTIFY_LEASE_SECS: "2",
    NOTIFY_SWEEP_SECS: "1",
  });
  const call = (child: ChildPlatform, method: string, path: string, body?: unknown) =>
    callChild(child, sandbox.secretKey, method, path, body);
  let child: ChildPlatform | null = await spawnPlatform(sandbox.env);
  try {
    await call(child, "PATCH", "/v1/notifications/settings", { webhook: { secret: SECRET } });
    const send = (i: number) =>
      call(child!, "POST", "/v1/notifications/send", {
        channel: "webhook",
        recipient: `${hook.url}/hook`,
        event: "e",
        payload: { i },
      });
    const sent = [];
    if (o.burst) sent.push(...await Promise.all(Array.from({ length: o.sends }, (_, i) => send(i))));
    else for (let i = 0; i < o.sends; i++) sent.push(await send(i));
    for (const res of sent) assertEquals(res.status, 200, JSON.stringify(res.body));
    const ids: string[] = sent.map((res) => res.body.data.id);
    assertEquals(new Set(ids).size, o.sends, "each request made its own notification");
    await waitUntil("answered webhooks and others in flight", () => {
      const answered = hook.arrived.filter((a) => a.status !== 0).length;
      return answered >= o.killAfter && (hook.active.get("/hook") ?? 0) > 0;
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
      return list.length === o.sends && list.every((n) => n.status === "delivered");
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
}

Deno.test("kill -9 with webhooks in flight: after the lease each is redelivered with its webhook-id", () =>
  crashAndRedeliver({ sends: 32, concurrency: 8, burst: false, killAfter: 8 }));

Deno.test("a burst of webhooks (batched writes, claims and finishes), kill -9: each delivered, under its own id", () =>
  crashAndRedeliver({ sends: 300, concurrency: 64, burst: true, killAfter: 64 }));

Deno.test("a send longer than its lease keeps it: renewed while in flight, sent once", async () => {
  const hook = webhookReceiver(SECRET, {}, { "/slow": 6000 }); // three leases long
  const sandbox = await makeSandbox({
    NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
    NOTIFY_LEASE_SECS: "2",
    NOTIFY_SWEEP_SECS: "1",
  });
  const child = await spawnPlatform(sandbox.env);
  const call = (method: string, path: string, body?: unknown) =>
    callChild(child, sandbox.secretKey, method, path, body);
  try {
    await call("PATCH", "/v1/notifications/settings", { webhook: { secret: SECRET } });
    const { body } = await call("POST", "/v1/notifications/send", {
      channel: "webhook",
      recipient: `${hook.url}/slow`,
      event: "e",
      payload: {},
    });
    let done: Json = {};
    await waitUntil("the slow webhook delivered", async () => {
      done = (await call("GET", `/v1/notifications/${body.data.id}`)).body.data;
      return done.status === "delivered" || done.status === "dead_lettered";
    }, 60_000);
    assertEquals([done.status, done.attempts], ["delivered", 1]);
    assertEquals(hook.arrived.map((a) => a.id), [body.data.id], "no second attempt took it over");
  } finally {
    await child.stop();
    await hook.close();
    await sandbox.destroy();
  }
});
