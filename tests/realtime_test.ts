import { serve } from "../lib/serve.ts";
import { SignJWT } from "jose";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform, type TestPlatform, within } from "./harness.ts";
import { roundTrip, WsClient } from "./realtime_client.ts";
import { MAX_WAITING_FRAMES } from "../services/realtime/transports.ts";

const SETUP = `
create table public.items (id bigint primary key, name text, n int, tag text);
select realtime.enable('public.items');
create table public.notes (id bigint primary key, owner uuid not null, body text);
alter table public.notes enable row level security;
create policy own_notes on public.notes for all to authenticated
  using (owner = auth.uid()) with check (owner = auth.uid());
select realtime.enable('public.notes');
create table public.secrets (id int primary key, v text);
alter table public.secrets enable row level security;
select realtime.enable('public.secrets');
create table public.markers (id bigserial primary key, label text);
select realtime.enable('public.markers');
create table public.hidden (id int primary key);
`;

interface User {
  id: string;
  token: string;
}

async function sql(p: TestPlatform, query: string, params?: unknown[]): Promise<Json> {
  const res = await p.fetch("/v1/sql", {
    method: "POST",
    headers: { apikey: p.secretKey },
    json: params ? { query, params } : { query },
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`SQL failed: ${JSON.stringify(body)}`);
  return body.data;
}

async function signUp(p: TestPlatform, email: string): Promise<User> {
  const { status, body } = await json(
    await p.fetch("/v1/auth/signup", {
      method: "POST",
      headers: { apikey: p.publicKey },
      json: { email, password: "password-123" },
    }),
  );
  assertEquals(status, 200);
  return { id: body.data.user.id, token: body.data.session.access_token };
}

/** Signs a user token of the default project that expires in `seconds`. */
async function shortToken(p: TestPlatform, user: User, seconds: number): Promise<string> {
  const project = await p.platform.projects.get("default");
  const now = Math.floor(Date.now() / 1000);
  return await new SignJWT({
    role: "authenticated",
    email: "short@example.com",
    ref: "default",
    session_id: "s",
  })
    .setProtectedHeader({ alg: "ES256", kid: project.jwt_kid, typ: "JWT" })
    .setSubject(user.id)
    .setAudience("authenticated")
    .setIssuedAt(now)
    .setExpirationTime(now + seconds)
    .sign(await p.platform.projects.signingKey("default"));
}

/** Inserts a marker row every client can see and waits until each got it: changes before it were processed. */
async function barrier(p: TestPlatform, clients: WsClient[]): Promise<void> {
  const label = crypto.randomUUID();
  await sql(p, "insert into public.markers (label) values ($1)", [label]);
  for (const c of clients) {
    await c.next((m) =>
      m.type === "event" && m.payload?.table === "markers" && m.payload.record.label === label
    );
  }
}

Deno.test("realtime over WebSocket and SSE", async (t) => {
  const p = await startPlatform({
    REALTIME_TOKEN_CHECK_MS: "200",
    REALTIME_MAX_BUFFER_BYTES: "262144",
    REALTIME_MAX_CHANNELS: "6",
    REALTIME_MAX_MESSAGE_BYTES: "65536",
    REALTIME_SSE_HEARTBEAT_MS: "300",
  });
  const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
  const base = `127.0.0.1:${server.addr.port}`;
  const wsUrl = (query: Record<string, string>) =>
    `ws://${base}/v1/realtime/ws?${new URLSearchParams(query)}`;
  const clients: WsClient[] = [];
  const connect = async (query: Record<string, string>) => {
    const c = await WsClient.connect(wsUrl(query));
    clients.push(c);
    // Every client follows the marker table, for barrier().
    await c.subscribe({ channel: "markers", postgres_changes: [{ event: "INSERT", table: "markers" }] });
    return c;
  };
  try {
    await sql(p, SETUP);
    const alice = await signUp(p, "alice@example.com");
    const bob = await signUp(p, "bob@example.com");

    await t.step("INSERT, UPDATE and DELETE arrive with the right payloads", async () => {
      const c = await connect({ apikey: p.publicKey });
      await c.subscribe({ channel: "items", postgres_changes: [{ event: "*", table: "items" }] });
      await sql(p, "insert into public.items (id, name, n, tag) values (1, 'one', 10, 'a')");
      const ins = await c.next((m) => m.type === "event" && m.channel === "items");
      assertEquals(ins.event, "postgres_changes");
      assertEquals(ins.payload.schema, "public");
      assertEquals(ins.payload.table, "items");
      assertEquals(ins.payload.type, "INSERT");
      assertEquals(ins.payload.record, { id: 1, name: "one", n: 10, tag: "a" });
      assertEquals(ins.payload.old_record, null);
      assertMatch(ins.payload.commit_timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

      await sql(p, "update public.items set name = 'uno' where id = 1");
      const upd = await c.next((m) => m.type === "event" && m.payload.type === "UPDATE");
      assertEquals(upd.payload.record, { id: 1, name: "uno", n: 10, tag: "a" });
      assertEquals(upd.payload.old_record, { id: 1, name: "one", n: 10, tag: "a" });

      await sql(p, "delete from public.items where id = 1");
      const del = await c.next((m) => m.type === "event" && m.payload.type === "DELETE");
      assertEquals(del.payload.record, null);
      assertEquals(del.payload.old_record, { id: 1 });
      await c.close();
    });

    await t.step("realtime.disable stops the capture; enable refuses what it cannot capture", async () => {
      const c = await connect({ apikey: p.publicKey });
      await c.subscribe({ channel: "toggle", postgres_changes: [{ table: "items" }] });
      await sql(p, "select realtime.disable('public.items')");
      await sql(p, "insert into public.items (id, name) values (2, 'unseen')");
      await barrier(p, [c]);
      assertEquals(c.changes("toggle"), []);
      const refused = await c.request({
        type: "subscribe",
        channel: "t2",
        postgres_changes: [{ table: "items" }],
      });
      assertEquals(refused.code, "NOT_FOUND");
      await sql(p, "select realtime.enable('public.items'); delete from public.items where id = 2");
      assertEquals((await c.next((m) => m.channel === "toggle")).payload.old_record, { id: 2 });
      const bad: [string, RegExp][] = [
        ["create table public.nopk (v int); select realtime.enable('public.nopk')", /no primary key/],
        ["select realtime.enable('auth.users')", /internal/],
        ["select realtime.enable('public.nosuch')", /does not exist/],
      ];
      for (const [query, message] of bad) {
        const res = await p.fetch("/v1/sql", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { query },
        });
        assertEquals(res.status, 400);
        assertMatch((await res.json()).error.message, message);
      }
      const anon = await p.fetch("/v1/sql", {
        method: "POST",
        headers: { apikey: p.publicKey },
        json: { query: "select realtime.enable('public.hidden')" },
      });
      assertEquals(anon.status, 403);
      await c.close();
    });

    await t.step("event kinds and filters eq, neq, lt, in", async () => {
      const c = await connect({ apikey: p.publicKey });
      const subs: [string, Record<string, unknown>][] = [
        ["f-eq", { event: "INSERT", table: "items", filter: "tag=eq.red" }],
        ["f-neq", { event: "INSERT", table: "items", filter: "tag=neq.red" }],
        ["f-lt", { event: "INSERT", table: "items", filter: "n=lt.5" }],
        ["f-in", { event: "INSERT", table: "items", filter: "id=in.(11,13)" }],
        ["f-upd", { event: "UPDATE", table: "items" }],
      ];
      for (const [channel, spec] of subs) await c.subscribe({ channel, postgres_changes: [spec] });
      await sql(
        p,
        `insert into public.items (id, name, n, tag) values
          (10, 'a', 1, 'red'), (11, 'b', 7, 'blue'), (12, 'c', 3, 'green'), (13, 'd', 9, 'red')`,
      );
      await sql(p, "update public.items set n = 100 where id = 12");
      await barrier(p, [c]);
      const ids = (ch: string) => c.changes(ch).map((m) => m.payload.record.id);
      assertEquals(ids("f-eq"), [10, 13]);
      assertEquals(ids("f-neq"), [11, 12]);
      assertEquals(ids("f-lt"), [10, 12]);
      assertEquals(ids("f-in"), [11, 13]);
      assertEquals(ids("f-upd"), [12]);
      await c.close();
    });

    await t.step("a change over the NOTIFY size limit is still delivered", async () => {
      const c = await connect({ apikey: p.publicKey });
      await c.subscribe({ channel: "big", postgres_changes: [{ table: "items", filter: "id=eq.50" }] });
      const name = "x".repeat(20_000);
      await sql(p, "insert into public.items (id, name) values (50, $1)", [name]);
      const ev = await c.next((m) => m.type === "event" && m.channel === "big");
      assertEquals(ev.payload.record.name.length, 20_000);
      await c.close();
    });

    await t.step("two users with an owner-only policy each see only their rows; anon sees none", async () => {
      const a = await connect({ apikey: p.publicKey, access_token: alice.token });
      const b = await connect({ apikey: p.publicKey, access_token: bob.token });
      const anon = await connect({ apikey: p.publicKey });
      for (const c of [a, b, anon]) {
        await c.subscribe({ channel: "notes", postgres_changes: [{ table: "notes" }] });
      }
      await sql(p, "insert into public.notes values (1, $1, 'a1'), (2, $2, 'b1'), (3, $1, 'a2')", [
        alice.id,
        bob.id,
      ]);
      await sql(p, "update public.notes set body = 'b1!' where id = 2");
      await sql(p, "delete from public.notes where id = 3");
      await barrier(p, [a, b, anon]);
      const seen = (c: WsClient) =>
        c.changes("notes").map((m) => `${m.payload.type}:${(m.payload.record ?? m.payload.old_record).id}`);
      assertEquals(seen(a), ["INSERT:1", "INSERT:3", "DELETE:3"]);
      assertEquals(seen(b), ["INSERT:2", "UPDATE:2"]);
      assertEquals(seen(anon), []);
      for (const c of [a, b, anon]) await c.close();
    });

    await t.step(
      "an ownership change: the new owner gets the new row but only the old row's key",
      async () => {
        const a = await connect({ apikey: p.publicKey, access_token: alice.token });
        const b = await connect({ apikey: p.publicKey, access_token: bob.token });
        for (const c of [a, b]) {
          await c.subscribe({ channel: "handover", postgres_changes: [{ table: "notes" }] });
        }
        await sql(p, "insert into public.notes values (40, $1, 'alice private diary')", [alice.id]);
        await sql(p, "update public.notes set owner = $1, body = 'now bob''s' where id = 40", [bob.id]);
        await barrier(p, [a, b]);
        const bobsUpdate = b.changes("handover").find((m) => m.payload.type === "UPDATE");
        assertEquals(bobsUpdate?.payload.record.body, "now bob's");
        assertEquals(bobsUpdate?.payload.old_record, { id: 40 }, "bob never sees alice's version of the row");
        // Alice could read the old row but cannot read the new one: she is told nothing of the update.
        assertEquals(a.changes("handover").map((m) => m.payload.type), ["INSERT"]);
        for (const c of [a, b]) await c.close();
      },
    );

    await t.step("a policy with only WITH CHECK grants no reads, as in PostgreSQL", async () => {
      await sql(
        p,
        `create table public.wc (id int primary key, owner text, v text);
         alter table public.wc enable row level security;
         create policy wc_write on public.wc for all to authenticated with check (owner = 'x');
         select realtime.enable('public.wc')`,
      );
      const a = await connect({ apikey: p.publicKey, access_token: alice.token });
      const service = await connect({ apikey: p.secretKey });
      for (const c of [a, service]) await c.subscribe({ channel: "wc", postgres_changes: [{ table: "wc" }] });
      await sql(p, "insert into public.wc values (1, 'y', 'not yours')");
      await barrier(p, [a, service]);
      assertEquals(a.changes("wc"), []);
      assertEquals(service.changes("wc").length, 1);
      for (const c of [a, service]) await c.close();
    });

    await t.step("anon and users see nothing of a private table; service_role sees it", async () => {
      const anon = await connect({ apikey: p.publicKey });
      const user = await connect({ apikey: p.publicKey, access_token: alice.token });
      const service = await connect({ apikey: p.secretKey });
      for (const c of [anon, user, service]) {
        await c.subscribe({ channel: "secrets", postgres_changes: [{ table: "secrets" }] });
      }
      await sql(p, "insert into public.secrets values (1, 'top')");
      await sql(p, "update public.secrets set v = 'secret' where id = 1");
      await sql(p, "delete from public.secrets where id = 1");
      await barrier(p, [anon, user, service]);
      assertEquals(anon.changes("secrets"), []);
      assertEquals(user.changes("secrets"), []);
      assertEquals(service.changes("secrets").map((m) => m.payload.type), ["INSERT", "UPDATE", "DELETE"]);
      // The check runs as the subscriber's role: a grant revoked after subscribing stops delivery at once.
      await sql(p, "create table public.open (id int primary key); select realtime.enable('public.open')");
      for (const c of [anon, service]) {
        await c.subscribe({ channel: "open", postgres_changes: [{ table: "open" }] });
      }
      await sql(p, "revoke select on public.open from anon; insert into public.open values (1)");
      await barrier(p, [anon, service]);
      assertEquals(anon.changes("open"), []);
      assertEquals(service.changes("open").length, 1);
      for (const c of [anon, user, service]) await c.close();
    });

    await t.step("a refreshed token changes what RLS lets through from that moment", async () => {
      const c = await connect({ apikey: p.publicKey });
      await c.subscribe({ channel: "notes", postgres_changes: [{ event: "INSERT", table: "notes" }] });
      await sql(p, "insert into public.notes values (20, $1, 'before')", [alice.id]);
      await barrier(p, [c]);
      assertEquals(c.changes("notes"), []);
      const refreshed = await c.request({ type: "access_token", token: alice.token }, [
        "token_refreshed",
        "error",
      ]);
      assertEquals(refreshed.type, "token_refreshed");
      assert(refreshed.expires_at > Date.now() / 1000);
      await sql(p, "insert into public.notes values (21, $1, 'after'), (22, $2, 'not mine')", [
        alice.id,
        bob.id,
      ]);
      await barrier(p, [c]);
      assertEquals(c.changes("notes").map((m) => m.payload.record.id), [21]);
      const toBob = await c.request({ type: "access_token", token: bob.token }, ["token_refreshed", "error"]);
      assertEquals(toBob.type, "token_refreshed");
      await sql(p, "insert into public.notes values (23, $1, 'alice'), (24, $2, 'bob')", [alice.id, bob.id]);
      await barrier(p, [c]);
      assertEquals(c.changes("notes").map((m) => m.payload.record.id), [21, 24]);
      await c.close();
    });

    await t.step("an expired token ends the connection with an INVALID_TOKEN error first", async () => {
      const c = await connect({ apikey: p.publicKey, access_token: await shortToken(p, alice, 2) });
      const error = await c.next((m) => m.type === "error", 10_000);
      assertEquals(error.code, "INVALID_TOKEN");
      const closed = await c.waitClosed();
      assertEquals(closed.code, 4001);
      // Refreshing in time keeps the connection open.
      const d = await connect({ apikey: p.publicKey, access_token: await shortToken(p, alice, 2) });
      const answer = await d.request({ type: "access_token", token: alice.token }, ["token_refreshed"]);
      assertEquals(answer.type, "token_refreshed");
      await new Promise((r) => setTimeout(r, 2500));
      await roundTrip(d);
      assertEquals(d.messages.filter((m) => m.type === "error"), []);
      await d.close();
    });

    await t.step("broadcast with and without self, with ack", async () => {
      const a = await connect({ apikey: p.publicKey });
      const b = await connect({ apikey: p.publicKey });
      await a.subscribe({ channel: "chat", broadcast: { self: true, ack: true } });
      await b.subscribe({ channel: "chat" });
      const ack = await a.request({
        type: "broadcast",
        channel: "chat",
        event: "msg",
        payload: { text: "hi" },
      }, [
        "broadcast_ack",
        "error",
      ]);
      assertEquals(ack.type, "broadcast_ack");
      assertEquals(ack.channel, "chat");
      const expected = {
        type: "event",
        channel: "chat",
        event: "broadcast",
        payload: { event: "msg", payload: { text: "hi" } },
      };
      assertEquals(await b.next((m) => m.event === "broadcast"), expected);
      assertEquals(await a.next((m) => m.event === "broadcast"), expected);
      b.send({ type: "broadcast", channel: "chat", event: "msg", payload: { text: "yo" } });
      assertEquals((await a.next((m) => m.event === "broadcast")).payload.payload, { text: "yo" });
      await roundTrip(b);
      assertEquals(b.messages.filter((m) => m.event === "broadcast").length, 1, "no self without self: true");
      assertEquals(b.messages.filter((m) => m.type === "broadcast_ack").length, 0, "no ack unless asked");
      for (const c of [a, b]) await c.close();
    });

    await t.step("presence join, update and leave with three clients", async () => {
      const [a, b, c] = [
        await connect({ apikey: p.publicKey }),
        await connect({ apikey: p.publicKey }),
        await connect({ apikey: p.publicKey }),
      ];
      for (const [client, key] of [[a, "a"], [b, "b"], [c, "c"]] as const) {
        await client.subscribe({ channel: "lobby", presence: { key } });
        assertEquals((await client.next((m) => m.type === "presence_state")).channel, "lobby");
      }
      const stateIs = (want: Json) => (m: Json) =>
        m.type === "presence_state" && JSON.stringify(m.state) === JSON.stringify(want);
      a.send({ type: "presence_update", channel: "lobby", state: { status: "online" } });
      for (const client of [a, b, c]) await client.next(stateIs({ a: [{ status: "online" }] }));
      b.send({ type: "presence_update", channel: "lobby", state: { status: "online" } });
      const ab = { a: [{ status: "online" }], b: [{ status: "online" }] };
      for (const client of [a, b, c]) await client.next(stateIs(ab));
      c.send({ type: "presence_update", channel: "lobby", state: { status: "typing" } });
      const abc = { ...ab, c: [{ status: "typing" }] };
      for (const client of [a, b, c]) await client.next(stateIs(abc));
      a.send({ type: "presence_update", channel: "lobby", state: { status: "away" } });
      const abc2 = { ...abc, a: [{ status: "away" }] };
      for (const client of [a, b, c]) await client.next(stateIs(abc2));
      // b leaves by unsubscribing, a by disconnecting.
      const left = await b.request({ type: "unsubscribe", channel: "lobby" }, ["unsubscribed"]);
      assertEquals(left.channel, "lobby");
      for (const client of [a, c]) {
        await client.next(stateIs({ a: [{ status: "away" }], c: [{ status: "typing" }] }));
      }
      await a.close();
      await c.next(stateIs({ c: [{ status: "typing" }] }));
      for (const client of [b, c]) await client.close();
    });

    await t.step("SSE receives the same changes, broadcasts and heartbeats", async () => {
      const ws = await connect({ apikey: p.publicKey });
      await ws.subscribe({
        channel: "items",
        postgres_changes: [{ table: "items", filter: "id=gte.60" }],
        broadcast: { self: false },
      });
      const res = await fetch(
        `http://${base}/v1/realtime/sse?${new URLSearchParams({
          apikey: p.publicKey,
          channel: "default:items",
          filter: "id=gte.60",
        })}`,
      );
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
      const frames = sseFrames(res.body!);
      // Cancelled however the step ends: an open stream would hold the server's shutdown.
      try {
        assertEquals((await frames.next((f) => f.event === "subscribed")).data, {
          type: "subscribed",
          channel: "items",
        });
        await sql(p, "insert into public.items (id, name) values (60, 'sse')");
        await sql(p, "update public.items set name = 'sse2' where id = 60");
        await sql(p, "delete from public.items where id = 60");
        for (const type of ["INSERT", "UPDATE", "DELETE"]) {
          const frame = await frames.next((f) =>
            f.event === "postgres_changes" && f.data.payload.type === type
          );
          const fromWs = await ws.next((m) => m.channel === "items" && m.payload?.type === type);
          assertEquals(frame.data, fromWs);
          assertMatch(frame.id ?? "", /^\d+$/);
        }
        ws.send({ type: "broadcast", channel: "items", event: "note", payload: 1 });
        const b = await frames.next((f) => f.event === "broadcast");
        assertEquals(b.data.payload, { event: "note", payload: 1 });
        await frames.next((f) => f.comment === "heartbeat");
        const ids = frames.all.filter((f) => f.id).map((f) => Number(f.id));
        assertEquals(ids, ids.map((_, i) => i + 1), "ids count up from 1");
      } finally {
        await frames.cancel().catch(() => {});
      }
      await ws.close();
    });

    await t.step("SSE refuses bad requests in the envelope", async () => {
      const cases: [Record<string, string>, number, string][] = [
        [{ channel: "default:items" }, 401, "UNAUTHORIZED"],
        [{ apikey: "pk_nope_0000000000000000", channel: "default:items" }, 401, "UNAUTHORIZED"],
        [{ apikey: p.publicKey, channel: "nosuch:items" }, 404, "PROJECT_NOT_FOUND"],
        [{ apikey: p.publicKey, channel: "default:items", filter: "id=like.1" }, 400, "VALIDATION_ERROR"],
        [{ apikey: p.publicKey, channel: "default:items", access_token: "x.y.z" }, 401, "INVALID_TOKEN"],
        [{ apikey: p.publicKey }, 400, "VALIDATION_ERROR"],
      ];
      for (const [query, status, code] of cases) {
        const res = await fetch(`http://${base}/v1/realtime/sse?${new URLSearchParams(query)}`);
        const body = await res.json();
        assertEquals([res.status, body.error?.code], [status, code], JSON.stringify(query));
      }
    });

    await t.step("WebSocket refuses bad credentials before the upgrade, in the envelope", async () => {
      const cases: [Record<string, string>, Record<string, string>, number, string][] = [
        [{}, { upgrade: "websocket" }, 401, "UNAUTHORIZED"],
        [{ apikey: "sk_x_0000000000000000" }, { upgrade: "websocket" }, 401, "UNAUTHORIZED"],
        [{ apikey: p.publicKey, access_token: "bad" }, { upgrade: "websocket" }, 401, "INVALID_TOKEN"],
        [{ apikey: p.publicKey }, {}, 400, "VALIDATION_ERROR"],
      ];
      for (const [query, headers, status, code] of cases) {
        const res = await fetch(`http://${base}/v1/realtime/ws?${new URLSearchParams(query)}`, { headers });
        const body = await res.json();
        assertEquals([res.status, body.error?.code], [status, code], JSON.stringify(query));
        assert(res.headers.get("x-request-id"));
      }
    });

    await t.step("malformed and hostile messages get an error and the socket stays open", async () => {
      const c = await connect({ apikey: p.publicKey });
      const cases: [unknown, string, RegExp][] = [
        ["{not json", "VALIDATION_ERROR", /not valid JSON/],
        ["[1,2]", "VALIDATION_ERROR", /JSON object/],
        [
          { type: "launch_missiles", ref: "x1" },
          "VALIDATION_ERROR",
          /Unknown message type "launch_missiles"/,
        ],
        [{ ref: "x2" }, "VALIDATION_ERROR", /Unknown message type missing/],
        [{ type: "subscribe", ref: "x3" }, "VALIDATION_ERROR", /channel/],
        [{ type: "subscribe", ref: "x4", channel: "a b" }, "VALIDATION_ERROR", /channel/],
        [{ type: "subscribe", ref: "x5", channel: "c", extra: 1 }, "VALIDATION_ERROR", /extra/],
        [
          {
            type: "subscribe",
            ref: "x6",
            channel: "c",
            postgres_changes: [{ table: "items", filter: "id=like.1" }],
          },
          "VALIDATION_ERROR",
          /Invalid filter/,
        ],
        [
          {
            type: "subscribe",
            ref: "x7",
            channel: "c",
            postgres_changes: [{ table: "items", filter: "nope=eq.1" }],
          },
          "VALIDATION_ERROR",
          /no column "nope"/,
        ],
        [
          { type: "subscribe", ref: "x9", channel: "c", postgres_changes: [{ table: "nosuch" }] },
          "NOT_FOUND",
          /not enabled for realtime/,
        ],
        [
          { type: "subscribe", ref: "x10", channel: "c", postgres_changes: [{ table: "hidden" }] },
          "NOT_FOUND",
          /not enabled/,
        ],
        [
          {
            type: "subscribe",
            ref: "x11",
            channel: "c",
            postgres_changes: [{ schema: "auth", table: "users" }],
          },
          "FORBIDDEN",
          /internal/,
        ],
        [
          {
            type: "subscribe",
            ref: "x12",
            channel: "c",
            postgres_changes: [{ schema: "realtime", table: "overflow" }],
          },
          "FORBIDDEN",
          /internal/,
        ],
        [
          { type: "subscribe", ref: "x13", channel: 'c"; drop table items; --' },
          "VALIDATION_ERROR",
          /channel/,
        ],
        [
          { type: "broadcast", ref: "x14", channel: "never", event: "e" },
          "VALIDATION_ERROR",
          /Not subscribed/,
        ],
        [
          { type: "presence_update", ref: "x15", channel: "never", state: {} },
          "VALIDATION_ERROR",
          /Not subscribed/,
        ],
        [{ type: "unsubscribe", ref: "x16", channel: "never" }, "VALIDATION_ERROR", /Not subscribed/],
        [{ type: "ping", ref: { nested: true } }, "VALIDATION_ERROR", /ref/],
        [
          JSON.stringify({ type: "broadcast", channel: "c", event: "e", payload: "x".repeat(70_000) }),
          "PAYLOAD_TOO_LARGE",
          /larger than the limit/,
        ],
      ];
      for (const [message, code, pattern] of cases) {
        c.send(message);
        const error = await c.next((m) => m.type === "error");
        if (code) assertEquals(error.code, code, JSON.stringify(message).slice(0, 120));
        assertMatch(error.message, pattern);
        const ref = typeof message === "object" ? (message as { ref?: unknown }).ref : undefined;
        if (typeof ref === "string") assertEquals(error.ref, ref);
      }
      c.socket.send(new Uint8Array([1, 2, 3]));
      assertMatch((await c.next((m) => m.type === "error")).message, /Binary/);
      // A filter value is only ever a value: compared in the server, never run as SQL.
      await c.subscribe({
        channel: "inj",
        postgres_changes: [{ table: "items", filter: "name=eq.x';drop table items;--" }],
      });
      await sql(p, "insert into public.items (id, name) values (70, $1)", ["x';drop table items;--"]);
      assertEquals((await c.next((m) => m.channel === "inj")).payload.record.id, 70);
      assertEquals((await sql(p, "select count(*)::int as n from public.items where id = 10"))[0].n, 1);
      await roundTrip(c);
      assertEquals(c.closeEvent, undefined);
      await c.close();
    });

    await t.step("limits: channels per connection; a channel of another project is forbidden", async () => {
      await p.fetch("/v1/admin/projects", {
        method: "POST",
        headers: { authorization: `Bearer ${await p.adminToken()}` },
        json: { ref: "other", name: "Other" },
      });
      const c = await connect({ apikey: p.publicKey }); // markers is channel 1 of 6
      const forbidden = await c.request({ type: "subscribe", channel: "other:room" });
      assertEquals([forbidden.type, forbidden.code], ["error", "FORBIDDEN"]);
      for (let i = 2; i <= 6; i++) await c.subscribe({ channel: `room-${i}` });
      const over = await c.request({ type: "subscribe", channel: "room-7" });
      assertEquals([over.type, over.code], ["error", "LIMIT_EXCEEDED"]);
      await c.subscribe({ channel: "room-6" }); // re-subscribing an existing channel is not a new one
      await c.close();
    });

    await t.step("an invalid access_token message ends the connection with an error first", async () => {
      const c = await connect({ apikey: p.publicKey });
      c.send({ type: "access_token", token: "not-a-token" });
      assertEquals((await c.next((m) => m.type === "error")).code, "INVALID_TOKEN");
      assertEquals((await c.waitClosed()).code, 4001);
    });

    await t.step(
      "a client that sends frames faster than they are answered is disconnected; the wait is bounded",
      async () => {
        const c = await connect({ apikey: p.publicKey });
        const before = p.platform.realtime.connectionCount;
        // Sent in one burst: the first subscribe waits for the database while the rest arrive behind it.
        for (let i = 0; i < MAX_WAITING_FRAMES * 2; i++) {
          c.send({
            type: "subscribe",
            channel: `burst-${i}`,
            postgres_changes: [{ event: "INSERT", table: "markers" }],
          });
        }
        const error = await c.next((m) => m.type === "error" && m.code === "TOO_MANY_MESSAGES");
        assertMatch(
          String(error.message),
          /messages or \d+ bytes sent before the earlier ones were answered/,
        );
        // The server closes with 4008 while the client is still sending: the client may see it as abnormal.
        await c.waitClosed();
        assertEquals(p.platform.realtime.connectionCount, before - 1);
      },
    );

    await t.step(
      "a client that never reads is disconnected with an error; memory stays bounded",
      async () => {
        const reader = await rawWebSocket(server.addr.port, `/v1/realtime/ws?apikey=${p.publicKey}`);
        await reader.sendText(JSON.stringify({ type: "subscribe", channel: "flood" }));
        const sender = await connect({ apikey: p.publicKey });
        await sender.subscribe({ channel: "flood", broadcast: { ack: true } });
        const before = p.platform.realtime.connectionCount;
        const payload = "y".repeat(50_000);
        let sent = 0;
        while (p.platform.realtime.connectionCount === before && sent < 2000) {
          const ack = await sender.request({ type: "broadcast", channel: "flood", event: "f", payload }, [
            "broadcast_ack",
          ]);
          assertEquals(ack.type, "broadcast_ack");
          sent++;
        }
        assertEquals(p.platform.realtime.connectionCount, before - 1, `dropped after ${sent} messages`);
        const text = await reader.readAll();
        assertMatch(text, /"code":"SLOW_CONSUMER"/);
        await sender.close();
      },
    );
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    try {
      // A liveness bound: a stream a failed step left open would hold the shutdown forever.
      await within(server.shutdown(), 60_000, "the server's shutdown (a stream left open?)");
    } finally {
      await p.close();
    }
  }
});

interface SseFrame {
  event?: string;
  id?: string;
  data?: Json;
  comment?: string;
}

/** Reads SSE frames from a stream as they come. */
function sseFrames(body: ReadableStream<Uint8Array>) {
  const all: SseFrame[] = [];
  const taken = new Set<SseFrame>();
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const pull = async () => {
    const { value, done } = await reader.read();
    if (done) throw new Error("SSE stream ended");
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: SseFrame = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(": ")) frame.comment = line.slice(2);
        else if (line.startsWith("event: ")) frame.event = line.slice(7);
        else if (line.startsWith("id: ")) frame.id = line.slice(4);
        else if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6));
      }
      all.push(frame);
    }
  };
  return {
    all,
    async next(match: (f: SseFrame) => boolean): Promise<SseFrame> {
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const found = all.find((f) => !taken.has(f) && match(f));
        if (found) {
          taken.add(found);
          return found;
        }
        // The deadline holds during a read too: a stream that stalls fails here instead of waiting forever.
        let timer: ReturnType<typeof setTimeout> | undefined;
        const expired = new Promise<false>((r) => timer = setTimeout(() => r(false), deadline - Date.now()));
        const pulled = await Promise.race([pull().then(() => true), expired]).finally(() =>
          clearTimeout(timer)
        );
        if (!pulled) break;
      }
      throw new Error(`No matching SSE frame; got ${JSON.stringify(all.slice(-5))}`);
    },
    cancel: () => reader.cancel(),
  };
}

/** A WebSocket client over raw TCP that sends frames but never reads until asked: a slow consumer. */
async function rawWebSocket(port: number, path: string) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  await conn.write(new TextEncoder().encode(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  ));
  // Read only the handshake answer.
  const head = new Uint8Array(1024);
  const n = await within(conn.read(head), 30_000, "the WebSocket handshake's answer");
  assertMatch(new TextDecoder().decode(head.subarray(0, n ?? 0)), /^HTTP\/1.1 101/);
  return {
    async sendText(text: string) {
      const data = new TextEncoder().encode(text);
      assert(data.length < 126);
      const mask = crypto.getRandomValues(new Uint8Array(4));
      const frame = new Uint8Array(2 + 4 + data.length);
      frame[0] = 0x81;
      frame[1] = 0x80 | data.length;
      frame.set(mask, 2);
      data.forEach((b, i) => (frame[6 + i] = b ^ mask[i % 4]!));
      await conn.write(frame);
    },
    /** Reads everything the server sent until it stops sending for a moment (or 60 s pass), then closes. */
    async readAll(): Promise<string> {
      const chunks: string[] = [];
      const decoder = new TextDecoder("latin1");
      const buf = new Uint8Array(1 << 16);
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const timer = new Promise<null>((r) => setTimeout(() => r(null), 1000));
        const read = await Promise.race([conn.read(buf), timer]);
        if (read === null) break;
        chunks.push(decoder.decode(buf.subarray(0, read)));
      }
      conn.close();
      return chunks.join("");
    },
  };
}
