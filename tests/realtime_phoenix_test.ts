// The /realtime/v1/websocket mount driven with a raw WebSocket: vsn 1.0.0 (supabase-js uses 2.0.0 by default,
// tests/supabase_realtime_test.ts), vsn 2.0.0 binary frames, and hostile input.
import { assert, assertEquals, within } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";

type Msg = {
  topic: string;
  event: string;
  payload: Record<string, unknown>;
  ref: string | null;
  join_ref?: string;
};

/** A raw Phoenix client: vsn 1.0.0 objects or vsn 2.0.0 arrays (binary frames decoded as kind 4 broadcasts). */
class Raw {
  readonly got: Msg[] = [];
  private constructor(readonly ws: WebSocket, readonly vsn: string) {}
  static open(url: string, vsn: string): Promise<Raw> {
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    const raw = new Raw(ws, vsn);
    ws.onmessage = (e) => raw.got.push(raw.decode(e.data));
    // A liveness bound, not a timing claim: a handshake that never ends fails instead of hanging the suite.
    const opened = new Promise<Raw>((resolve, reject) => {
      ws.onopen = () => resolve(raw);
      ws.onerror = () => reject(new Error("connect failed"));
    });
    return within(opened, 30_000, `the WebSocket's open: ${url}`).catch((err) => {
      ws.close();
      throw err;
    });
  }
  decode(data: string | ArrayBuffer): Msg {
    if (typeof data !== "string") {
      const b = new Uint8Array(data);
      assertEquals(b[0], 4);
      const [t, e, m, encoding] = [b[1]!, b[2]!, b[3]!, b[4]!];
      const text = (from: number, to: number) => new TextDecoder().decode(b.subarray(from, to));
      const topic = text(5, 5 + t);
      const event = text(5 + t, 5 + t + e);
      // Encoding 0: raw bytes (shown as an array of numbers); 1: JSON.
      const payload = encoding === 0
        ? [...b.subarray(5 + t + e + m)]
        : JSON.parse(text(5 + t + e + m, b.length));
      return {
        topic,
        event: "broadcast",
        payload: { type: "broadcast", event, payload, binary: true },
        ref: null,
      };
    }
    const v = JSON.parse(data);
    if (this.vsn === "1.0.0") return v;
    return { join_ref: v[0], ref: v[1], topic: v[2], event: v[3], payload: v[4] };
  }
  send(topic: string, event: string, payload: unknown, ref: string | null, joinRef: string | null = null) {
    this.ws.send(
      this.vsn === "1.0.0"
        ? JSON.stringify({ topic, event, payload, ref, join_ref: joinRef })
        : JSON.stringify([joinRef, ref, topic, event, payload]),
    );
  }
  async wait(pred: (m: Msg) => boolean, ms = 5000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.got.find(pred);
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(`no such message; got ${JSON.stringify(this.got).slice(-1500)}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  reply(ref: string): Promise<Msg> {
    return this.wait((m) => m.event === "phx_reply" && m.ref === ref);
  }
}

/** A kind 3 frame (a client's broadcast push), as realtime-js's serializer builds it. */
function push3(joinRef: string, ref: string, topic: string, event: string, payload: unknown, encoding = 1) {
  const enc = new TextEncoder();
  const parts = [joinRef, ref, topic, event, ""].map((x) => enc.encode(x));
  const body = payload instanceof Uint8Array ? payload : enc.encode(JSON.stringify(payload));
  const out = new Uint8Array(7 + parts.reduce((n, p) => n + p.length, 0) + body.length);
  out.set([3, ...parts.map((p) => p.length), encoding]);
  let offset = 7;
  for (const p of [...parts, body]) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

Deno.test({
  name: "realtime /realtime/v1/websocket: vsn 1.0.0, vsn 2.0.0 binary broadcasts, hostile frames",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const s = await servePlatform({ REALTIME_MAX_CHANNELS: "5", REALTIME_MAX_MESSAGE_BYTES: "4096" });
    const base = `ws://127.0.0.1:${s.server.addr.port}/realtime/v1/websocket`;
    const url = (vsn: string, key = s.p.publicKey) => `${base}?apikey=${key}&vsn=${vsn}&log_level=info`;
    const sockets: Raw[] = [];
    const open = async (vsn: string, key?: string) => {
      const r = await Raw.open(url(vsn, key), vsn);
      sockets.push(r);
      return r;
    };
    try {
      await t.step("credentials and the query are checked before the upgrade", async () => {
        for (
          const [q, status] of [
            [`?vsn=1.0.0`, 401],
            [`?apikey=nope&vsn=1.0.0`, 401],
            [`?apikey=${s.p.publicKey}&vsn=3.0.0`, 400],
            [`?apikey=${s.p.publicKey}&vsn=1.0.0`, 400], // no Upgrade header
          ] as const
        ) {
          const res = await fetch(`http://127.0.0.1:${s.server.addr.port}/realtime/v1/websocket${q}`);
          assertEquals(res.status, status, q);
          await res.body?.cancel();
        }
      });

      await t.step("vsn 1.0.0: heartbeat, join, broadcast with ack and self, presence, leave", async () => {
        const a = await open("1.0.0");
        const b = await open("1.0.0");
        a.send("phoenix", "heartbeat", {}, "1");
        assertEquals((await a.reply("1")).payload, { status: "ok", response: {} });
        const config = { broadcast: { ack: true, self: true }, presence: { key: "ada", enabled: true } };
        a.send("realtime:room", "phx_join", { config }, "2", "2");
        const joined = await a.reply("2");
        assertEquals(joined.payload, { status: "ok", response: { postgres_changes: [] } });
        assertEquals(joined.join_ref, "2");
        await a.wait((m) => m.event === "presence_state");
        b.send("realtime:room", "phx_join", { config: { presence: { key: "bob" } } }, "1", "1");
        await b.reply("1");
        a.send("realtime:room", "broadcast", { type: "broadcast", event: "hi", payload: { n: 1 } }, "3", "2");
        assertEquals((await a.reply("3")).payload.status, "ok");
        const got = await b.wait((m) => m.event === "broadcast");
        assertEquals(got.payload, { type: "broadcast", event: "hi", payload: { n: 1 } });
        await a.wait((m) => m.event === "broadcast"); // self: true
        a.send(
          "realtime:room",
          "presence",
          { type: "presence", event: "track", payload: { s: "on" } },
          "4",
          "2",
        );
        await a.reply("4");
        const diff = await b.wait((m) => m.event === "presence_diff");
        const joins = diff.payload.joins as Record<string, { metas: { s: string; phx_ref: string }[] }>;
        assertEquals(joins.ada?.metas[0]?.s, "on");
        assert(typeof joins.ada?.metas[0]?.phx_ref === "string");
        a.send("realtime:room", "phx_leave", {}, "5", "2");
        await a.reply("5");
        const left = await b.wait((m) =>
          m.event === "presence_diff" && Object.keys(m.payload.leaves as object).length > 0
        );
        assertEquals(Object.keys(left.payload.leaves as object), ["ada"]);
        // After the leave the topic is unknown.
        a.send("realtime:room", "broadcast", { type: "broadcast", event: "hi", payload: {} }, "6", "2");
        assertEquals((await a.reply("6")).payload, {
          status: "error",
          response: { reason: "unmatched topic" },
        });
      });

      await t.step("vsn 2.0.0: a kind 3 push is fanned out as kind 4 binary frames, acked", async () => {
        const a = await open("2.0.0");
        const b = await open("2.0.0");
        const v1 = await open("1.0.0");
        a.send("realtime:bin", "phx_join", { config: { broadcast: { ack: true } } }, "1", "1");
        b.send("realtime:bin", "phx_join", { config: {} }, "1", "1");
        v1.send("realtime:bin", "phx_join", { config: {} }, "1", "1");
        await Promise.all([a.reply("1"), b.reply("1"), v1.reply("1")]);
        a.ws.send(push3("1", "2", "realtime:bin", "move", { x: 1, é: "ü" }));
        assertEquals((await a.reply("2")).payload.status, "ok");
        const got = await b.wait((m) => m.event === "broadcast");
        assertEquals(got.payload, {
          type: "broadcast",
          event: "move",
          payload: { x: 1, é: "ü" },
          binary: true,
        });
        // The same broadcast reaches a vsn 1.0.0 client as JSON, and the platform's own protocol shares the hub.
        assertEquals((await v1.wait((m) => m.event === "broadcast")).payload.event, "move");

        // Raw bytes (encoding 0) go out as raw bytes, to vsn 2.0.0 clients only.
        a.ws.send(push3("1", "3", "realtime:bin", "raw", new Uint8Array([0, 159, 255, 10]), 0));
        assertEquals((await a.reply("3")).payload.status, "ok");
        const raw = await b.wait((m) => m.payload.event === "raw");
        assertEquals(raw.payload.payload, [0, 159, 255, 10]);
        a.ws.send(push3("1", "4", "realtime:bin", "after", {}, 1));
        await b.wait((m) => m.payload.event === "after");
        await v1.wait((m) => m.payload.event === "after");
        assertEquals(v1.got.filter((m) => m.payload.event === "raw"), []);
      });

      await t.step(
        "fuzz: 400 malformed binary frames get error replies; the server and socket live",
        async () => {
          const v2 = await open("2.0.0");
          const peer = await open("2.0.0");
          v2.send("realtime:fuzz", "phx_join", { config: { broadcast: { ack: true } } }, "1", "1");
          peer.send("realtime:fuzz", "phx_join", { config: {} }, "1", "1");
          await Promise.all([v2.reply("1"), peer.reply("1")]);
          // A fixed seed: the same frames every run (xorshift32).
          let seed = 0x2545f491;
          const rand = (n: number) => {
            seed ^= seed << 13;
            seed ^= seed >>> 17;
            seed ^= seed << 5;
            return (seed >>> 0) % n;
          };
          const valid = push3("1", "f", "realtime:fuzz", "ev", { k: "v" });
          for (let i = 0; i < 400; i++) {
            let frame: Uint8Array;
            switch (i % 4) {
              case 0: // a few bytes of a valid frame changed
                frame = valid.slice();
                for (let j = 0; j < 1 + rand(4); j++) frame[rand(frame.length)] = rand(256);
                break;
              case 1: // a valid frame cut short
                frame = valid.slice(0, rand(valid.length));
                break;
              case 2: // kind 3 with random lengths and encoding over random bytes
                frame = new Uint8Array(7 + rand(64)).map(() => rand(256));
                frame[0] = 3;
                break;
              default: // noise
                frame = new Uint8Array(rand(80)).map(() => rand(256));
            }
            v2.ws.send(frame);
            // In rounds of 50, each closed by a heartbeat: past 256 unanswered frames a client is cut off (a flood).
            if (i % 50 === 49) {
              v2.send("phoenix", "heartbeat", {}, `hb${i}`);
              assertEquals((await v2.reply(`hb${i}`)).payload.status, "ok");
            }
          }
          assertEquals(v2.ws.readyState, WebSocket.OPEN);
          // Whatever got through was a well-formed broadcast; nothing else came back but replies.
          const joined = ["phx_reply", "presence_state"];
          for (const m of v2.got) assert(joined.includes(m.event), JSON.stringify(m));
          for (const m of peer.got) assert([...joined, "broadcast"].includes(m.event), JSON.stringify(m));
          assert(v2.got.filter((m) => m.payload.status === "error").length > 300);
          peer.send("phoenix", "heartbeat", {}, "hb");
          assertEquals((await peer.reply("hb")).payload.status, "ok");
        },
      );

      await t.step("hostile frames get an error reply and the socket stays open", async () => {
        const v2 = await open("2.0.0");
        const v1 = await open("1.0.0");
        const garbage: (string | Uint8Array)[] = [
          new Uint8Array([9, 1, 2, 3]),
          new Uint8Array([3]),
          new Uint8Array([3, 200, 200, 200, 200, 200, 1, 65]),
          push3("1", "2", "realtime:bin", "x", {}, 0), // binary payload
          push3("1", "2", "realtime:bin", "x", {}, 7),
          new Uint8Array([3, 0, 0, 2, 0, 0, 1, 0xff, 0xfe]),
          "not json",
          "[1,2,3]",
          JSON.stringify([null, "1", "x".repeat(1000), "phx_join", {}]),
          JSON.stringify([null, "1", "realtime:a", "", {}]),
          JSON.stringify([null, { a: 1 }, "realtime:a", "phx_join", {}]),
          JSON.stringify([null, "1", "realtime:a", "phx_join", [1]]),
          JSON.stringify([null, "1", "realtime:" + "a".repeat(255), "phx_join", {
            config: { private: "yes" },
          }]),
          JSON.stringify([null, "1", "realtime:a b", "phx_join", {}]),
          JSON.stringify([null, "1", "nope", "phx_join", {}]),
          JSON.stringify([null, "1", "phoenix", "what", {}]),
          JSON.stringify([null, "1", "realtime:a", "phx_join", {
            config: { postgres_changes: [{ event: "*" }] },
          }]),
          JSON.stringify([null, "1", "realtime:a", "phx_join", { config: { postgres_changes: "x" } }]),
          "x".repeat(5000),
        ];
        for (const frame of garbage) v2.ws.send(frame);
        v1.ws.send(new Uint8Array([3, 0, 0]));
        v1.ws.send(JSON.stringify([1, 2]));
        await v2.wait(() => v2.got.length >= garbage.length);
        await v1.wait(() => v1.got.length >= 2);
        for (const m of [...v2.got, ...v1.got]) {
          assertEquals(m.event, "phx_reply", JSON.stringify(m));
          assertEquals(m.payload.status, "error", JSON.stringify(m));
        }
        assert(JSON.stringify(v2.got).includes("larger than the limit"));
        v2.send("phoenix", "heartbeat", {}, "hb");
        assertEquals((await v2.reply("hb")).payload.status, "ok");
      });

      await t.step("join flood: past REALTIME_MAX_CHANNELS a join is refused; the socket lives", async () => {
        const r = await open("1.0.0");
        for (let i = 0; i < 50; i++) {
          r.send(`realtime:flood${i}`, "phx_join", { config: {} }, `j${i}`, `j${i}`);
        }
        await r.reply("j49");
        const replies = r.got.filter((m) => m.event === "phx_reply");
        assertEquals(replies.filter((m) => m.payload.status === "ok").length, 5);
        assert(
          String((replies.at(-1)!.payload.response as { reason: string }).reason).startsWith(
            "LIMIT_EXCEEDED",
          ),
        );
      });

      await t.step("private channels: refused with a public key, open to the secret key", async () => {
        const anon = await open("2.0.0");
        anon.send("realtime:secret", "phx_join", { config: { private: true } }, "1", "1");
        const no = await anon.reply("1");
        assertEquals(no.payload.status, "error");
        assert(String((no.payload.response as { reason: string }).reason).startsWith("Unauthorized"));
        const admin = await open("2.0.0", s.p.secretKey);
        admin.send("realtime:secret", "phx_join", { config: { private: true } }, "1", "1");
        assertEquals((await admin.reply("1")).payload.status, "ok");
        // A public channel of the same name is another channel: its members do not hear the private one.
        anon.send("realtime:secret", "phx_join", { config: {} }, "2", "2");
        await anon.reply("2");
        admin.send("realtime:secret", "broadcast", { type: "broadcast", event: "x", payload: {} }, "3", "1");
        await new Promise((r) => setTimeout(r, 200));
        assertEquals(anon.got.filter((m) => m.event === "broadcast").length, 0);
      });

      await t.step(
        "a bad token in phx_join is refused; a bad access_token event closes with system + phx_close",
        async () => {
          const r = await open("1.0.0");
          r.send("realtime:t", "phx_join", { config: {}, access_token: "bad.token.here" }, "1", "1");
          const refused = await r.reply("1");
          assertEquals(refused.payload.status, "error");
          assert(String((refused.payload.response as { reason: string }).reason).startsWith("INVALID_TOKEN"));
          r.send("phoenix", "heartbeat", {}, "2");
          assertEquals((await r.reply("2")).payload.status, "ok");
          const r2 = await open("1.0.0");
          const closed = new Promise<number>((resolve) =>
            r2.ws.addEventListener("close", (e) => resolve(e.code))
          );
          r2.send("realtime:t", "phx_join", { config: {} }, "1", "1");
          await r2.reply("1");
          r2.send("realtime:t", "access_token", { access_token: "bad.token.here" }, "2", "1");
          const system = await r2.wait((m) => m.event === "system");
          assertEquals(system.payload.status, "error");
          await r2.wait((m) => m.event === "phx_close");
          // An invalid token ends the connection as on /v1/realtime/ws (close 4001), after telling the client.
          assertEquals(await within(closed, 30_000, "the close after the bad access_token"), 4001);
        },
      );
    } finally {
      for (const r of sockets) r.ws.close();
      await s.close();
    }
  },
});
