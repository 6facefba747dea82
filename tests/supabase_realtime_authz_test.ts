// supabase-js (pinned in deno.json) against a real platform: binary broadcast payloads (vsn 2.0.0), private
// channels authorized by the project's policies on realtime.messages, and broadcast over HTTP (httpSend, and
// send() on a channel that is not joined).
import type { SupabaseClient } from "@supabase/supabase-js";
import { assert, assertEquals, within } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
import { client, type Session, signUp, sleep, sql, subscribed, until } from "./supabase_realtime_fixture.ts";

// Members of a private room may receive; those with can_send may also send and be present.
const POLICIES = `create table public.members (topic text, email text, can_send boolean);
create policy members_read on realtime.messages for select to authenticated using (
  exists (select 1 from public.members m where m.topic = realtime.topic() and m.email = auth.jwt() ->> 'email'));
create policy members_write on realtime.messages for insert to authenticated with check (
  exists (select 1 from public.members m
           where m.topic = realtime.topic() and m.email = auth.jwt() ->> 'email' and m.can_send));
insert into public.members values ('room:1', 'ada@example.com', true), ('room:1', 'cy@example.com', false);`;

const bytes = (b: unknown) => [...new Uint8Array(b as ArrayBuffer)];

Deno.test({
  name:
    "supabase-js realtime: binary payloads, private channels under realtime.messages policies, HTTP broadcast",
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
      await sql(s, POLICIES);
      const ada = await signUp(s, "ada@example.com");
      const bob = await signUp(s, "bob@example.com");
      const cy = await signUp(s, "cy@example.com");
      const as = (session: Session) => make(() => session.access_token);

      await t.step("vsn 2.0.0: a binary payload goes out and arrives as bytes; JSON alongside", async () => {
        const one = await make();
        const two = await make();
        const old = await make(undefined, "1.0.0");
        const got: unknown[] = [];
        const gotOld: unknown[] = [];
        const chOne = one.channel("bin", { config: { broadcast: { ack: true } } });
        const chTwo = two.channel("bin").on("broadcast", { event: "*" }, (m) => got.push(m));
        const chOld = old.channel("bin").on("broadcast", { event: "*" }, (m) => gotOld.push(m.event));
        await Promise.all([subscribed(chOne), subscribed(chTwo), subscribed(chOld)]);
        const sent = new Uint8Array([0, 1, 2, 250, 255]);
        assertEquals(await chOne.send({ type: "broadcast", event: "raw", payload: sent.buffer }), "ok");
        assertEquals(await chOne.send({ type: "broadcast", event: "json", payload: { n: 1 } }), "ok");
        await until(() => got.length === 2 && gotOld.length === 1);
        const [raw, json] = got as { event: string; payload: unknown }[];
        assertEquals(raw!.event, "raw");
        assert(raw!.payload instanceof ArrayBuffer);
        assertEquals(bytes(raw!.payload), [...sent]);
        assertEquals(json!.payload, { n: 1 });
        // vsn 1.0.0 has no binary frames: it gets the JSON broadcast only (Supabase's clients drop binaries too).
        await sleep(200);
        assertEquals(gotOld, ["json"]);
      });

      await t.step("private channel: a member joins and hears; others and anon are refused", async () => {
        const asAda = await as(ada);
        const asCy = await as(cy);
        const heard: unknown[] = [];
        const chAda = asAda.channel("room:1", { config: { private: true, broadcast: { ack: true } } });
        const chCy = asCy.channel("room:1", { config: { private: true } })
          .on("broadcast", { event: "say" }, (m) => heard.push(m.payload));
        await Promise.all([subscribed(chAda), subscribed(chCy)]);
        assertEquals(await chAda.send({ type: "broadcast", event: "say", payload: { text: "hi" } }), "ok");
        await until(() => heard.length === 1);
        assertEquals(heard, [{ text: "hi" }]);
        // Cy may hear but not send: her broadcast is refused and nobody hears it.
        const adaHeard: unknown[] = [];
        chAda.on("broadcast", { event: "say" }, (m) => adaHeard.push(m.payload));
        const chCyAck = (await as(cy)).channel("room:1", {
          config: { private: true, broadcast: { ack: true } },
        });
        await subscribed(chCyAck);
        assertEquals(
          await chCyAck.send({ type: "broadcast", event: "say", payload: { text: "cy" } }),
          "error",
        );
        await sleep(200);
        assertEquals(adaHeard, []);

        for (const who of [await as(bob), await make()]) {
          const refused = await subscribed(who.channel("room:1", { config: { private: true } })).then(
            () => "joined",
            (err: Error) => err.message,
          );
          assert(
            refused.includes("You do not have permissions to read from this Channel topic: room:1"),
            refused,
          );
        }
        // The public channel of the same name is another channel: it hears nothing of the private one.
        const outsider = await as(bob);
        const overheard: unknown[] = [];
        await subscribed(
          outsider.channel("room:1").on("broadcast", { event: "say" }, (m) => overheard.push(m.payload)),
        );
        assertEquals(await chAda.send({ type: "broadcast", event: "say", payload: { text: "again" } }), "ok");
        await until(() => heard.length === 2);
        await sleep(200);
        assertEquals(overheard, []);
      });

      await t.step(
        "private channel presence: a writer tracks, a reader sees it, a reader cannot track",
        async () => {
          const asAda = await as(ada);
          const asCy = await as(cy);
          const joins: string[] = [];
          const chAda = asAda.channel("room:1", { config: { private: true, presence: { key: "ada" } } });
          const chCy = asCy.channel("room:1", { config: { private: true, presence: { key: "cy" } } })
            .on("presence", { event: "join" }, ({ key }) => joins.push(key));
          await Promise.all([subscribed(chAda), subscribed(chCy)]);
          assertEquals(await chAda.track({ at: "desk" }), "ok");
          await until(() => joins.includes("ada"));
          assertEquals(chCy.presenceState<{ at: string }>().ada?.map((p) => p.at), ["desk"]);
          assertEquals(await chCy.track({ at: "door" }), "error");
          await sleep(200);
          assertEquals(joins, ["ada"]);
        },
      );

      await t.step(
        "private channel: a new token is checked again; one that may not read closes it",
        async () => {
          let token = ada.access_token;
          const c = await make(() => token);
          const statuses: string[] = [];
          const system: { status: string; message: string }[] = [];
          const ch = c.channel("room:1", { config: { private: true } }).on(
            "system",
            {},
            (p) => system.push(p),
          );
          // A liveness bound (30 s), not a timing claim: a join that never succeeds would hold this forever.
          await within(
            new Promise<void>((resolve) =>
              ch.subscribe((status) => {
                statuses.push(status);
                if (status === "SUBSCRIBED") {
                  resolve();
                }
              })
            ),
            30_000,
            "the subscription to the private room:1",
          );
          token = bob.access_token;
          await c.realtime.setAuth();
          await until(() => statuses.includes("CLOSED"));
          assert(
            system.some((m) =>
              m.status === "error" &&
              m.message.includes("do not have permissions to read from this Channel topic")
            ),
            JSON.stringify(system),
          );
          await c.removeAllChannels();
        },
      );

      await t.step(
        "HTTP: httpSend (JSON and bytes) and send() before joining reach subscribers",
        async () => {
          const listener = await make();
          const got: { event: string; payload: unknown }[] = [];
          await subscribed(
            listener.channel("news").on(
              "broadcast",
              { event: "*" },
              (m) => got.push({ event: m.event, payload: m.payload }),
            ),
          );
          const sender = await make();
          const ch = sender.channel("news");
          assertEquals(await ch.httpSend("json", { a: 1 }), { success: true });
          assertEquals(await ch.httpSend("bytes", new Uint8Array([7, 8, 9])), { success: true });
          assertEquals(await ch.send({ type: "broadcast", event: "batch", payload: { b: 2 } }), "ok");
          await until(() => got.length === 3);
          const byEvent = Object.fromEntries(got.map((m) => [m.event, m.payload]));
          assertEquals(byEvent.json, { a: 1 });
          assertEquals(bytes(byEvent.bytes), [7, 8, 9]);
          assertEquals(byEvent.batch, { b: 2 });
          await sender.removeChannel(ch);
        },
      );

      await t.step("HTTP to a private topic: the sender's INSERT policy decides", async () => {
        const heard: unknown[] = [];
        await subscribed(
          (await as(cy)).channel("room:1", { config: { private: true } })
            .on("broadcast", { event: "http" }, (m) => heard.push(m.payload)),
        );
        const fromAda = (await as(ada)).channel("room:1", { config: { private: true } });
        assertEquals(await fromAda.httpSend("http", { from: "ada" }), { success: true });
        await until(() => heard.length === 1);
        for (const who of [await as(bob), await as(cy), await make()]) {
          const refused = await who.channel("room:1", { config: { private: true } }).httpSend("http", {
            x: 1,
          })
            .then(() => "sent", (err: Error) => err.message);
          assertEquals(refused, "You do not have permissions to broadcast to this Channel topic: room:1");
        }
        await sleep(200);
        assertEquals(heard, [{ from: "ada" }]);
      });

      await t.step(
        "replay: broadcasts stored with persist reach a later member that asks for them",
        async () => {
          const since = Date.now() - 1000;
          const sender = (await as(ada)).channel("room:1", {
            config: { private: true, broadcast: { ack: true } },
          });
          await subscribed(sender);
          assertEquals(
            await sender.send({ type: "broadcast", event: "hist", payload: { n: 1 }, persist: true }),
            "ok",
          );
          assertEquals(await sender.httpSend("hist", { n: 2 }, { persist: { ttl: 60 } }), { success: true });
          // Not stored: a plain broadcast, and Cy's (she may not send).
          assertEquals(await sender.send({ type: "broadcast", event: "hist", payload: { n: 3 } }), "ok");
          const cyCh = (await as(cy)).channel("room:1", {
            config: { private: true, broadcast: { ack: true } },
          });
          await subscribed(cyCh);
          assert(
            (await cyCh.send({ type: "broadcast", event: "hist", payload: { n: 4 }, persist: true }))
              .includes("permissions"),
          );
          type Replayed = { payload: { n: number }; meta?: { replayed?: boolean; id: string } };
          const late = async (replay: { since: number; limit?: number }) => {
            const got: Replayed[] = [];
            const ch = (await as(cy)).channel("room:1", { config: { private: true, broadcast: { replay } } })
              .on("broadcast", { event: "hist" }, (m) => got.push(m as unknown as Replayed));
            await subscribed(ch);
            return got;
          };
          const all = await late({ since });
          await until(() => all.length === 2);
          assertEquals(all.map((m) => [m.payload.n, m.meta?.replayed]), [[1, true], [2, true]]);
          assert(all.every((m) => typeof m.meta?.id === "string" && m.meta.id.length === 36));
          const first = await late({ since, limit: 1 });
          const none = await late({ since: Date.now() + 60_000 });
          await until(() => first.length === 1);
          await sleep(300);
          assertEquals(first.map((m) => m.payload.n), [1]);
          assertEquals(none, []);
          // A public channel cannot store, nor replay.
          const refused = await fetch(`${s.url}/realtime/v1/api/broadcast/news/events/e?persist=true`, {
            method: "POST",
            headers: { apikey: s.p.publicKey, "content-type": "application/json" },
            body: "{}",
          });
          assertEquals(refused.status, 400);
          assert((await refused.json()).message.includes("private channel"));
        },
      );

      await t.step(
        "HTTP: bad requests are refused with realtime's {message} and nothing is sent",
        async () => {
          const heard: unknown[] = [];
          await subscribed(
            (await make()).channel("news2").on("broadcast", { event: "*" }, (m) => heard.push(m)),
          );
          const url = `${s.url}/realtime/v1/api/broadcast`;
          const post = async (path: string, body: BodyInit, headers: Record<string, string> = {}) => {
            const res = await fetch(url + path, {
              method: "POST",
              headers: { apikey: s.p.publicKey, "content-type": "application/json", ...headers },
              body,
            });
            return { status: res.status, message: (await res.json()).message as string };
          };
          const ok = { topic: "news2", event: "e", payload: {} };
          const cases: [string, BodyInit, Record<string, string>, number][] = [
            ["", JSON.stringify({ messages: [ok] }), { apikey: "pk_nope" }, 401],
            ["", "not json", {}, 400],
            ["", JSON.stringify({ messages: [] }), {}, 400],
            ["", JSON.stringify({ messages: Array(101).fill(ok) }), {}, 400],
            ["", JSON.stringify({ messages: [ok, { ...ok, topic: "no spaces" }] }), {}, 400],
            ["", JSON.stringify({ messages: [ok, { ...ok, payload: { x: "y".repeat(300_000) } }] }), {}, 413],
            ["/news2/events/e", JSON.stringify({ a: 1 }), { authorization: "Bearer not.a.jwt" }, 401],
          ];
          for (const [path, body, headers, status] of cases) {
            const got = await post(path, body, headers);
            assertEquals(got.status, status, JSON.stringify(got));
            assert(typeof got.message === "string" && got.message.length > 0);
          }
          // A batch is checked whole first: the valid message beside a bad one was not sent either.
          await sleep(200);
          assertEquals(heard, []);
        },
      );
    } finally {
      for (const c of clients) await c.removeAllChannels().catch(() => {});
      await s.close();
    }
  },
});
