// supabase-js (pinned in deno.json) against a real platform on a real socket: the /realtime/v1 mount speaks
// the Phoenix channel protocol of realtime-js. Users' tokens come from the platform's own /v1/auth routes and are
// handed to supabase-js with the `accessToken` option (a `realtime.setAuth(token)` alone is overwritten by the
// client's own callback, which falls back to the API key, at the next heartbeat).
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { assert, assertEquals, within } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
import { client, refresh, signUp, sleep, sql, subscribed, until } from "./supabase_realtime_fixture.ts";

const SETUP =
  `create table public.messages (id bigserial primary key, room text, body text, owner uuid default auth.uid());
alter table public.messages enable row level security;
create policy read_own on public.messages for select to authenticated using (owner = auth.uid());
create policy write_own on public.messages for insert to authenticated with check (owner = auth.uid());
select realtime.enable('public.messages');`;

type Change = { eventType: string; new: Record<string, unknown>; old: Record<string, unknown> };

Deno.test({
  name: "supabase-js realtime: postgres_changes under RLS, broadcast with ack, presence, token refresh",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const s = await servePlatform();
    const clients: SupabaseClient[] = [];
    const make = async (token?: () => string | null, vsn?: string) => {
      const c = await client(s, token, vsn);
      clients.push(c);
      return c;
    };
    try {
      await sql(s, SETUP);
      let ada = await signUp(s, "ada@example.com");
      const bob = await signUp(s, "bob@example.com");

      await t.step("postgres_changes: each user sees only the rows RLS lets them read", async () => {
        const asAda = await make(() => ada.access_token);
        const asBob = await make(() => bob.access_token);
        const seen = { ada: [] as Change[], bob: [] as Change[] };
        const chA = asAda.channel("db-ada").on(
          "postgres_changes",
          { event: "INSERT", schema: "public", table: "messages" },
          (p) => seen.ada.push(p as unknown as Change),
        );
        const chB = asBob.channel("db-bob").on(
          "postgres_changes",
          { event: "*", schema: "public", table: "messages", filter: "room=eq.1" },
          (p) => seen.bob.push(p as unknown as Change),
        );
        await Promise.all([subscribed(chA), subscribed(chB)]);
        const insA = await asAda.from("messages").insert({ room: "1", body: "ada's" });
        assertEquals(insA.error, null);
        await until(() => seen.ada.length === 1);
        assertEquals(seen.ada[0]!.eventType, "INSERT");
        assertEquals(seen.ada[0]!.new.body, "ada's");
        assertEquals(typeof seen.ada[0]!.new.id, "number");
        const insB = await asBob.from("messages").insert({ room: "1", body: "bob's" });
        assertEquals(insB.error, null);
        await until(() => seen.bob.length === 1);
        await sleep(300);
        // Ada never sees Bob's row, Bob never sees Ada's.
        assertEquals(seen.ada.map((c) => c.new.body), ["ada's"]);
        assertEquals(seen.bob.map((c) => c.new.body), ["bob's"]);
        await asAda.removeAllChannels();
        await asBob.removeAllChannels();
      });

      await t.step("broadcast with ack between two clients (vsn 2.0.0 and 1.0.0)", async () => {
        const one = await make(undefined, "1.0.0");
        const two = await make();
        assertEquals(two.realtime.vsn, "2.0.0");
        assertEquals(one.realtime.vsn, "1.0.0");
        const got: { one: unknown[]; two: unknown[] } = { one: [], two: [] };
        const chOne = one.channel("room", { config: { broadcast: { ack: true } } })
          .on("broadcast", { event: "wave" }, (m) => got.one.push(m.payload));
        const chTwo = two.channel("room", { config: { broadcast: { ack: true } } })
          .on("broadcast", { event: "wave" }, (m) => got.two.push(m.payload));
        await Promise.all([subscribed(chOne), subscribed(chTwo)]);
        assertEquals(await chTwo.send({ type: "broadcast", event: "wave", payload: { from: "two" } }), "ok");
        assertEquals(await chOne.send({ type: "broadcast", event: "wave", payload: { from: "one" } }), "ok");
        await until(() => got.one.length === 1 && got.two.length === 1);
        await sleep(200);
        // Not echoed to the sender (self: false).
        assertEquals(got, { one: [{ from: "two" }], two: [{ from: "one" }] });
        await one.removeAllChannels();
        await two.removeAllChannels();
      });

      await t.step("presence: track and untrack are seen by the other client", async () => {
        const a = await make(() => ada.access_token);
        const b = await make(() => bob.access_token);
        const joins: string[] = [];
        const leaves: string[] = [];
        const chA = a.channel("lobby", { config: { presence: { key: "ada" } } });
        const chB = b.channel("lobby", { config: { presence: { key: "bob" } } })
          .on("presence", { event: "join" }, ({ key }) => joins.push(key))
          .on("presence", { event: "leave" }, ({ key }) => leaves.push(key));
        chA.on("presence", { event: "sync" }, () => {});
        await Promise.all([subscribed(chA), subscribed(chB)]);
        assertEquals(await chA.track({ status: "online" }), "ok");
        await until(() => joins.includes("ada"));
        const state = chB.presenceState<{ status: string }>();
        assertEquals(state.ada?.map((p) => p.status), ["online"]);
        assert(typeof state.ada?.[0]?.presence_ref === "string");
        assertEquals(await chA.untrack(), "ok");
        await until(() => leaves.includes("ada"));
        assertEquals(chB.presenceState().ada, undefined);
        await a.removeAllChannels();
        await b.removeAllChannels();
      });

      await t.step("token refresh on a live channel: RLS follows the new token", async () => {
        let token = ada.access_token;
        const c = await make(() => token);
        const bodies: string[] = [];
        const ch = c.channel("refresh").on(
          "postgres_changes",
          { event: "INSERT", schema: "public", table: "messages" },
          (p) => bodies.push(String((p as unknown as Change).new.body)),
        );
        await subscribed(ch);
        // The same user's rotated token, sent on the open channel.
        ada = await refresh(s, ada);
        token = ada.access_token;
        await c.realtime.setAuth();
        await (await make(() => ada.access_token)).from("messages").insert({
          room: "2",
          body: "after refresh",
        });
        await until(() => bodies.includes("after refresh"));
        // Another user's token: from now on the channel sees Bob's rows and not Ada's.
        token = bob.access_token;
        await c.realtime.setAuth();
        await sleep(200);
        await (await make(() => ada.access_token)).from("messages").insert({ room: "2", body: "ada again" });
        await (await make(() => bob.access_token)).from("messages").insert({ room: "2", body: "bob now" });
        await until(() => bodies.includes("bob now"));
        await sleep(300);
        assertEquals(bodies, ["after refresh", "bob now"]);
        // A bad token closes the channel with a system error first.
        const system: { status: string; message: string }[] = [];
        const statuses: string[] = [];
        const bad = await make(() => ada.access_token);
        const chBad = bad.channel("bad").on("system", {}, (p) => system.push(p));
        // A liveness bound (30 s), not a timing claim: a join that never succeeds would hold this forever.
        await within(
          new Promise<void>((resolve) =>
            chBad.subscribe((status) => {
              statuses.push(status);
              if (status === "SUBSCRIBED") resolve();
            })
          ),
          30_000,
          "the subscription to the channel whose token turns bad",
        );
        await bad.realtime.setAuth("not-a-token");
        await until(() => system.some((m) => m.status === "error"));
        await until(() => statuses.includes("CLOSED"));
        await c.removeAllChannels();
        await bad.removeAllChannels();
      });
    } finally {
      for (const c of clients) await c.removeAllChannels().catch(() => {});
      await s.close();
    }
  },
});

Deno.test({
  name: "supabase-js realtime: after a server restart the channel rejoins, without duplicate events",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    let s = await servePlatform();
    const port = s.server.addr.port;
    const session = await (async () => {
      await sql(s, SETUP);
      return await signUp(s, "restart@example.com");
    })();
    const c = createClient(s.url, s.p.publicKey, {
      accessToken: () => Promise.resolve(session.access_token),
      realtime: { heartbeatIntervalMs: 2_000, reconnectAfterMs: () => 200 },
    });
    await c.realtime.setAuth();
    try {
      const bodies: string[] = [];
      const statuses: string[] = [];
      const ch = c.channel("room").on(
        "postgres_changes",
        { event: "INSERT", schema: "public", table: "messages" },
        (p) => bodies.push(String((p as unknown as Change).new.body)),
      );
      ch.subscribe((status) => statuses.push(status));
      await until(() => statuses.includes("SUBSCRIBED"));
      await c.from("messages").insert({ body: "before" });
      await until(() => bodies.length === 1);

      await s.close({ keepSandbox: true });
      await until(() => !c.realtime.isConnected());
      s = await servePlatform({}, { sandbox: s.p.sandbox, port });
      await until(() => statuses.filter((x) => x === "SUBSCRIBED").length === 2, 20_000);
      await c.from("messages").insert({ body: "after" });
      await until(() => bodies.length === 2);
      await sleep(500);
      assertEquals(bodies, ["before", "after"]);
    } finally {
      await c.removeAllChannels().catch(() => {});
      await s.close();
    }
  },
});
