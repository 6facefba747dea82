// realtime.send() and realtime.broadcast_changes() from SQL, against a real platform on a real socket: supabase-js
// (pinned in deno.json) and the platform's own protocol receive what an RPC, a trigger or the SQL editor sends,
// under the project's policies on realtime.messages; a rolled-back send and an oversized payload send nothing.
import type { SupabaseClient } from "@supabase/supabase-js";
import { assert, assertEquals } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
import { WsClient } from "./realtime_client.ts";
import { client, type Session, signUp, sleep, sql, subscribed, until } from "./supabase_realtime_fixture.ts";

// Members of a private room may receive what is sent there, senders may send; anyone signed in may send to the
// public topic `lobby`. The RPCs send as their caller (no security definer), the trigger as whoever writes.
const SETUP = `create table public.members (topic text, email text, can_send boolean);
create policy members_read on realtime.messages for select to authenticated using (
  extension = 'broadcast' and exists (
    select 1 from public.members m where m.topic = realtime.topic() and m.email = auth.jwt() ->> 'email'));
create policy members_presence on realtime.messages for select to authenticated using (
  extension = 'presence' and realtime.topic() = 'room:1');
create policy members_write on realtime.messages for insert to authenticated with check (
  (realtime.topic() = 'lobby' and not private)
  or exists (select 1 from public.members m
              where m.topic = realtime.topic() and m.email = auth.jwt() ->> 'email' and m.can_send));
insert into public.members values ('room:1', 'ada@example.com', true), ('room:1', 'cy@example.com', false);
create function public.announce(topic text, body text, private boolean default false) returns void
language sql as $$ select realtime.send(jsonb_build_object('body', body), 'announce', topic, private) $$;
create function public.announce_then_fail(body text) returns void language plpgsql as $$
begin
  perform realtime.send(jsonb_build_object('body', body), 'announce', 'lobby', false);
  raise exception 'changed my mind';
end $$;
create table public.notes (id bigint primary key, body text);
create function public.notes_broadcast() returns trigger language plpgsql security definer
set search_path = public as $$
begin
  perform realtime.broadcast_changes('notes', TG_OP, TG_OP, TG_TABLE_NAME, TG_TABLE_SCHEMA, NEW, OLD);
  return null;
end $$;
create trigger notes_broadcast after insert or update or delete on public.notes
  for each row execute function public.notes_broadcast();`;

const LIMIT = 200 * 1024;

interface Heard {
  event: string;
  payload: Record<string, unknown>;
}

Deno.test({
  name: "realtime.send() from SQL: supabase-js and the platform's protocol receive it, under the policies",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    // A limit of its own, to see that the configuration reaches SQL.
    const s = await servePlatform({ REALTIME_MAX_MESSAGE_BYTES: String(LIMIT) });
    const clients: SupabaseClient[] = [];
    const sockets: WsClient[] = [];
    const make = async (token?: () => string | null) => {
      const c = await client(s, token);
      clients.push(c);
      return c;
    };
    const rpc = (fn: string, body: unknown, token?: string) =>
      fetch(`${s.url}/rest/v1/rpc/${fn}`, {
        method: "POST",
        headers: {
          apikey: s.p.publicKey,
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      });
    const listen = async (c: SupabaseClient, topic: string, isPrivate = false) => {
      const heard: Heard[] = [];
      await subscribed(
        c.channel(topic, { config: { private: isPrivate } })
          .on("broadcast", { event: "*" }, (m) => heard.push({ event: m.event, payload: m.payload })),
      );
      return heard;
    };
    try {
      await sql(s, SETUP);
      const ada = await signUp(s, "ada@example.com");
      const bob = await signUp(s, "bob@example.com");
      const cy = await signUp(s, "cy@example.com");
      const as = (session: Session) => make(() => session.access_token);

      await t.step("an RPC's send reaches supabase-js and the platform's own protocol", async () => {
        const heard = await listen(await make(), "lobby");
        const own = await WsClient.connect(
          `${s.url.replace("http", "ws")}/v1/realtime/ws?apikey=${s.p.publicKey}`,
        );
        sockets.push(own);
        await own.subscribe({ channel: "lobby" });
        const res = await rpc("announce", { topic: "lobby", body: "hello" }, ada.access_token);
        assertEquals(res.status, 204, await res.text());
        await until(() => heard.length === 1);
        assertEquals(heard[0]!.event, "announce");
        assertEquals(heard[0]!.payload.body, "hello");
        // The payload carries the message's id, as Supabase's does.
        assert(typeof heard[0]!.payload.id === "string");
        const event = await own.next((m) => m.type === "event" && m.event === "broadcast");
        assertEquals(event.channel, "lobby");
        assertEquals(event.payload, { event: "announce", payload: heard[0]!.payload });
      });

      await t.step(
        "a caller whose policies refuse the message sends nothing, and gets no error",
        async () => {
          const heard = await listen(await make(), "lobby");
          // anon has no insert policy; bob may not send to the private room.
          const anon = await rpc("announce", { topic: "lobby", body: "anon" });
          assertEquals(anon.status, 204, await anon.text());
          const outsider = await rpc(
            "announce",
            { topic: "room:1", body: "bob", private: true },
            bob.access_token,
          );
          assertEquals(outsider.status, 204, await outsider.text());
          const ok = await rpc("announce", { topic: "lobby", body: "after" }, ada.access_token);
          assertEquals(ok.status, 204);
          await until(() => heard.length === 1);
          await sleep(200);
          assertEquals(heard.map((h) => h.payload.body), ["after"]);
        },
      );

      await t.step("a private send reaches the members who may read it, not the others", async () => {
        const member = await listen(await as(cy), "room:1", true);
        // Bob may see the room's presence but not read its broadcasts: he joins and hears nothing.
        const reader = await listen(await as(bob), "room:1", true);
        const outsider = await listen(await make(), "room:1");
        const res = await rpc(
          "announce",
          { topic: "room:1", body: "secret", private: true },
          ada.access_token,
        );
        assertEquals(res.status, 204, await res.text());
        await until(() => member.length === 1);
        assertEquals(member[0]!.payload.body, "secret");
        await sleep(300);
        assertEquals(reader, []);
        assertEquals(outsider, []);
      });

      await t.step(
        "a private send is kept for replay; a stored client broadcast is not sent twice",
        async () => {
          const live = await listen(await as(cy), "room:1", true);
          const since = Date.now();
          const res = await rpc(
            "announce",
            { topic: "room:1", body: "kept", private: true },
            ada.access_token,
          );
          assertEquals(res.status, 204);
          const sender = (await as(ada)).channel("room:1", {
            config: { private: true, broadcast: { ack: true } },
          });
          await subscribed(sender);
          assertEquals(
            await sender.send({
              type: "broadcast",
              event: "announce",
              payload: { body: "stored" },
              persist: true,
            }),
            "ok",
          );
          await until(() => live.length === 2);
          const replayed: { payload: { body: string }; meta?: { replayed?: boolean } }[] = [];
          await subscribed(
            (await as(cy)).channel("room:1", { config: { private: true, broadcast: { replay: { since } } } })
              .on(
                "broadcast",
                { event: "announce" },
                (m) => replayed.push(m as unknown as typeof replayed[0]),
              ),
          );
          await until(() => replayed.length >= 2);
          await sleep(300);
          assertEquals(live.map((h) => h.payload.body), ["kept", "stored"]);
          assertEquals(replayed.map((m) => [m.payload.body, m.meta?.replayed]), [["kept", true], [
            "stored",
            true,
          ]]);
        },
      );

      await t.step("a send in a transaction that rolls back delivers nothing", async () => {
        const heard = await listen(await make(), "lobby");
        const failed = await rpc("announce_then_fail", { body: "never" }, ada.access_token);
        assertEquals(failed.status, 400);
        await sql(
          s,
          `do $$ begin
             perform realtime.send('{"body": "rolled back"}', 'announce', 'lobby', false);
             raise exception 'roll back';
           exception when others then null;
           end $$`,
        );
        await sql(s, `select realtime.send('{"body": "kept"}', 'announce', 'lobby', false)`);
        await until(() => heard.length === 1);
        await sleep(300);
        assertEquals(heard.map((h) => h.payload.body), ["kept"]);
      });

      await t.step("a payload over the broadcast limit is an error and sends nothing", async () => {
        const heard = await listen(await make(), "lobby");
        const big = "x".repeat(300 * 1024);
        const res = await rpc("announce", { topic: "lobby", body: big }, ada.access_token);
        assertEquals(res.status, 400);
        const error = await res.json();
        assertEquals(error.code, "54000");
        assert(String(error.message).includes(`larger than the limit of ${LIMIT} bytes`), error.message);
        // Over the size of a notification but under the limit, a payload arrives whole.
        const large = "y".repeat(100 * 1024);
        assertEquals((await rpc("announce", { topic: "lobby", body: large }, ada.access_token)).status, 204);
        await until(() => heard.length === 1);
        assertEquals(heard[0]!.payload.body, large);
      });

      await t.step(
        "broadcast_changes from a row trigger sends each change to the private topic",
        async () => {
          await sql(s, "insert into public.members values ('notes', 'ada@example.com', false)");
          const heard = await listen(await as(ada), "notes", true);
          await sql(
            s,
            "insert into public.notes values (1, 'first'); update public.notes set body = 'second'",
          );
          await sql(s, "delete from public.notes");
          await until(() => heard.length === 3);
          assertEquals(heard.map((h) => h.event), ["INSERT", "UPDATE", "DELETE"]);
          const [insert, update, del] = heard.map((h) => h.payload);
          assertEquals(
            { ...insert, id: undefined },
            {
              id: undefined,
              operation: "INSERT",
              table: "notes",
              schema: "public",
              record: { id: 1, body: "first" },
              old_record: null,
            },
          );
          assertEquals(update!.old_record, { id: 1, body: "first" });
          assertEquals(update!.record, { id: 1, body: "second" });
          assertEquals(del!.record, null);
        },
      );
    } finally {
      for (const c of clients) await c.removeAllChannels();
      for (const w of sockets) await w.close();
      await s.close();
    }
  },
});
