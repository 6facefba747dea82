import { type ChangePayload, createClient, type PresenceState } from "../client/mod.ts";
import { assert, assertEquals, within } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";

const SETUP =
  `create table public.messages (id bigserial primary key, room text, body text, owner uuid default auth.uid());
alter table public.messages enable row level security;
create policy read_own on public.messages for select to authenticated using (owner = auth.uid());
create policy write_own on public.messages for insert to authenticated with check (owner = auth.uid());
select realtime.enable('public.messages');`;

// A liveness bound, not a timing claim: the SDK's requests wait for the platform's answer without a timer of their
// own, so a platform that never answers fails the test with the wait's name instead of holding the suite.
const LIVE_MS = 30_000;

/** Waits until `check` holds, up to `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${check}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("client realtime: changes, broadcast, presence, errors, heartbeat, token renewal, SSE", async (t) => {
  const s = await servePlatform();
  const admin = createClient(s.url, s.p.secretKey);
  const platform = createClient(s.url, s.p.publicKey, { realtime: { heartbeatMs: 200 } });
  const other = createClient(s.url, s.p.publicKey);
  try {
    await admin.sql(SETUP);
    await platform.auth.signUp({ email: "rt@example.com", password: "correct horse 1" });

    await t.step("postgres_changes: the user's own inserts arrive, filtered", async () => {
      const changes: ChangePayload[] = [];
      const channel = await within(
        platform.realtime
          .channel("room:1")
          .on(
            "postgres_changes",
            { event: "INSERT", table: "messages", filter: "room=eq.1" },
            (c) => changes.push(c),
          )
          .subscribe(),
        LIVE_MS,
        "the subscription to room:1",
      );
      assertEquals(channel.state, "joined");
      await platform.db.from("messages").insert({ room: "2", body: "elsewhere" });
      await platform.db.from("messages").insert({ room: "1", body: "hello" });
      await until(() => changes.length === 1);
      assertEquals([changes[0]!.type, changes[0]!.record?.body], ["INSERT", "hello"]);
      // The heartbeat (every 200 ms here) keeps the connection up.
      await new Promise((r) => setTimeout(r, 700));
      assert(platform.realtime.connected);
      await within(channel.unsubscribe(), LIVE_MS, "the unsubscription from room:1");
      assertEquals(channel.state, "closed");
    });

    await t.step("a table not enabled for realtime is PlatformError NOT_FOUND", async () => {
      const err = await rejects(() =>
        within(
          other.realtime.channel("bad").on("postgres_changes", { table: "nope" }, () => {}).subscribe(),
          LIVE_MS,
          "the refusal of the subscription to a table not enabled",
        )
      );
      assertEquals(err.code, "NOT_FOUND");
    });

    await t.step("broadcast with ack, presence track and untrack", async () => {
      const got: unknown[] = [];
      const states: PresenceState[] = [];
      const listener = await within(
        other.realtime
          .channel("lobby", { presence: { key: "bob" } })
          .on("broadcast", { event: "wave" }, (b) => got.push(b.payload))
          .on("presence", {}, (state) => states.push(state))
          .subscribe(),
        LIVE_MS,
        "the listener's subscription to lobby",
      );
      const sender = await within(
        platform.realtime
          .channel("lobby", { presence: { key: "ada" }, broadcast: { ack: true } })
          .subscribe(),
        LIVE_MS,
        "the sender's subscription to lobby",
      );
      await within(sender.send("wave", { hi: 1 }), LIVE_MS, "the broadcast's ack");
      await until(() => got.length === 1);
      assertEquals(got, [{ hi: 1 }]);
      await sender.track({ status: "online" });
      await until(() => Object.keys(states.at(-1) ?? {}).includes("ada"));
      await within(sender.untrack(), LIVE_MS, "the untrack (an unsubscribe and a subscribe)");
      await until(() => !Object.keys(states.at(-1) ?? {}).includes("ada"));
      await within(sender.unsubscribe(), LIVE_MS, "the sender's unsubscription");
      await within(listener.unsubscribe(), LIVE_MS, "the listener's unsubscription");
    });

    await t.step("a refreshed session's token is sent on the open connection", async () => {
      const changes: ChangePayload[] = [];
      const channel = await within(
        platform.realtime
          .channel("room:3")
          .on("postgres_changes", { event: "INSERT", table: "messages" }, (c) => changes.push(c))
          .subscribe(),
        LIVE_MS,
        "the subscription to room:3",
      );
      const sent: string[] = [];
      const socketSend = WebSocket.prototype.send;
      WebSocket.prototype.send = function (data) {
        sent.push(String(data));
        return socketSend.call(this, data);
      };
      try {
        await within(platform.auth.refreshSession(), LIVE_MS, "the session's refresh");
        await until(() => sent.some((m) => JSON.parse(m).type === "access_token"));
      } finally {
        WebSocket.prototype.send = socketSend;
      }
      await platform.db.from("messages").insert({ room: "3", body: "after refresh" });
      await until(() => changes.some((c) => c.record?.body === "after refresh"));
      await within(channel.unsubscribe(), LIVE_MS, "the unsubscription from room:3");
    });

    await t.step("SSE fallback: changes arrive; sending is PlatformError NOT_SUPPORTED", async () => {
      const sse = createClient(s.url, s.p.publicKey, { realtime: { transport: "sse" } });
      // Closed however the step ends: its open stream would hold the server's shutdown.
      try {
        await sse.auth.signInWithPassword({ email: "rt@example.com", password: "correct horse 1" });
        const changes: ChangePayload[] = [];
        const channel = await within(
          sse.realtime
            .channel("feed")
            .on("postgres_changes", { event: "INSERT", table: "messages" }, (c) => changes.push(c))
            .subscribe(),
          LIVE_MS,
          "the SSE subscription to feed",
        );
        await platform.db.from("messages").insert({ room: "4", body: "over sse" });
        await until(() => changes.some((c) => c.record?.body === "over sse"));
        assertEquals((await rejects(() => channel.send("x", {}))).code, "NOT_SUPPORTED");
        await channel.unsubscribe();
      } finally {
        sse.close();
      }
    });
  } finally {
    admin.close();
    platform.close();
    other.close();
    await s.close();
  }
});

Deno.test("client realtime: after the server restarts, subscriptions are restored without duplicate events", async () => {
  let s = await servePlatform();
  const port = s.server.addr.port;
  const admin = createClient(s.url, s.p.secretKey);
  const platform = createClient(s.url, s.p.publicKey, {
    realtime: { reconnectMinMs: 50, reconnectMaxMs: 500 },
  });
  try {
    await admin.sql(SETUP);
    await platform.auth.signUp({ email: "restart@example.com", password: "correct horse 1" });
    const bodies: string[] = [];
    await within(
      platform.realtime
        .channel("room")
        .on(
          "postgres_changes",
          { event: "INSERT", table: "messages" },
          (c) => bodies.push(String(c.record?.body)),
        )
        .subscribe(),
      LIVE_MS,
      "the subscription to room",
    );
    await platform.db.from("messages").insert({ body: "before" });
    await until(() => bodies.length === 1);

    await s.close({ keepSandbox: true });
    await until(() => !platform.realtime.connected);
    s = await servePlatform({}, { sandbox: s.p.sandbox, port });
    await until(() => platform.realtime.connected, 20_000);
    // Resubscribed once the connection is back: a change made now arrives exactly once.
    for (let i = 0; i < 100 && platform.realtime.channel("room").state !== "joined"; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await platform.db.from("messages").insert({ body: "after" });
    await until(() => bodies.length === 2);
    await new Promise((r) => setTimeout(r, 500));
    assertEquals(bodies, ["before", "after"]);
  } finally {
    admin.close();
    platform.close();
    await s.close();
  }
});
