import { assertEquals } from "./assert.ts";
import { type ChildPlatform, type Json, makeSandbox, serverUrl, spawnPlatform, within } from "./harness.ts";
import { WsClient } from "./realtime_client.ts";

async function sql(child: ChildPlatform, secretKey: string, query: string): Promise<void> {
  const res = await fetch(`${child.url}/v1/sql`, {
    method: "POST",
    headers: { apikey: secretKey, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  if (res.status !== 200) throw new Error(`SQL failed: ${await res.text()}`);
  await res.body?.cancel();
}

// A liveness bound, not a timing claim: a wait that would hang the suite fails with its name instead.
const LIVE_MS = 30_000;

/** Polls `check` every 20 ms until it holds; fails with `what` after LIVE_MS. */
async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + LIVE_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Still waiting after ${LIVE_MS / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Two platform processes share one PostgreSQL database and use LISTEN/NOTIFY as their bus. PGlite keeps its
// data in one process, so this scenario exists only when the suite runs against PostgreSQL.
if (serverUrl) {
  Deno.test("realtime across two instances on one PostgreSQL database (DATABASE_URL only: PGlite is single-process)", async (t) => {
    const sandbox = await makeSandbox();
    const one = await spawnPlatform(sandbox.env);
    let two: ChildPlatform | undefined;
    const clients: WsClient[] = [];
    try {
      two = await spawnPlatform(sandbox.env);
      const second = two;
      const connect = async (child: ChildPlatform) => {
        const c = await WsClient.connect(
          `${child.url.replace("http", "ws")}/v1/realtime/ws?apikey=${sandbox.publicKey}`,
        );
        clients.push(c);
        return c;
      };
      await sql(
        one,
        sandbox.secretKey,
        "create table public.items (id int primary key, name text); select realtime.enable('public.items');",
      );
      const a = await connect(one);
      const b = await connect(second);
      for (const [c, key] of [[a, "a"], [b, "b"]] as const) {
        await c.subscribe({
          channel: "room",
          postgres_changes: [{ table: "items" }],
          presence: { key },
          broadcast: { self: false },
        });
      }

      await t.step("a change made through one instance reaches subscribers of both", async () => {
        await sql(one, sandbox.secretKey, "insert into public.items values (1, 'one')");
        await sql(second, sandbox.secretKey, "insert into public.items values (2, 'two')");
        for (const c of [a, b]) {
          for (const id of [1, 2]) {
            const ev = await c.next((m) => m.event === "postgres_changes" && m.payload.record.id === id);
            assertEquals(ev.payload.type, "INSERT");
          }
        }
      });

      await t.step("a broadcast through one instance reaches the other, large ones too", async () => {
        a.send({ type: "broadcast", channel: "room", event: "hello", payload: { from: "a" } });
        assertEquals((await b.next((m) => m.event === "broadcast")).payload, {
          event: "hello",
          payload: { from: "a" },
        });
        const big = "z".repeat(20_000); // over the NOTIFY limit: carried through realtime.overflow
        b.send({ type: "broadcast", channel: "room", event: "big", payload: big });
        assertEquals((await a.next((m) => m.event === "broadcast")).payload.payload, big);
      });

      await t.step(
        "presence is shared and a member that disconnects leaves on the other instance",
        async () => {
          const stateIs = (want: Json) => (m: Json) =>
            m.type === "presence_state" && JSON.stringify(m.state) === JSON.stringify(want);
          a.send({ type: "presence_update", channel: "room", state: { at: "one" } });
          await b.next(stateIs({ a: [{ at: "one" }] }));
          b.send({ type: "presence_update", channel: "room", state: { at: "two" } });
          await a.next((m) => m.type === "presence_state" && m.state.a && m.state.b);
          // A third client joining the second instance late gets the first instance's members.
          const c = await connect(second);
          await c.subscribe({ channel: "room", presence: { key: "c" } });
          await c.next((m) => m.type === "presence_state" && m.state.a?.[0]?.at === "one" && m.state.b);
          await a.close();
          await b.next(stateIs({ b: [{ at: "two" }] }));
        },
      );

      await t.step(
        "raw bytes broadcast over HTTP on one instance reach a vsn 2.0.0 client of the other",
        async () => {
          const ws = new WebSocket(
            `${second.url.replace("http", "ws")}/realtime/v1/websocket?apikey=${sandbox.publicKey}&vsn=2.0.0`,
          );
          ws.binaryType = "arraybuffer";
          const frames: (string | ArrayBuffer)[] = [];
          ws.onmessage = (e) => frames.push(e.data);
          try {
            await within(
              new Promise((resolve, reject) => {
                ws.onopen = resolve;
                ws.onerror = () => reject(new Error("the vsn 2.0.0 WebSocket failed to open"));
              }),
              LIVE_MS,
              "the vsn 2.0.0 WebSocket's open",
            );
            ws.send(JSON.stringify(["1", "1", "realtime:bytes", "phx_join", { config: {} }]));
            await waitFor(
              () => frames.some((f) => typeof f === "string" && f.includes("phx_reply")),
              "the phx_join's reply",
            );
            const res = await fetch(`${one.url}/realtime/v1/api/broadcast/bytes/events/raw`, {
              method: "POST",
              headers: { apikey: sandbox.publicKey, "content-type": "application/octet-stream" },
              body: new Uint8Array([0, 1, 254, 255]),
            });
            assertEquals(res.status, 202);
            await res.body?.cancel();
            await waitFor(() => frames.some((f) => f instanceof ArrayBuffer), "the raw bytes' frame");
            const frame = new Uint8Array(frames.find((f) => f instanceof ArrayBuffer) as ArrayBuffer);
            // Kind 4, topic "realtime:bytes" (14), event "raw" (3), no meta, encoding 0 (bytes), then the payload.
            assertEquals([...frame.subarray(0, 5)], [4, 14, 3, 0, 0]);
            assertEquals([...frame.subarray(5 + 14 + 3)], [0, 1, 254, 255]);
          } finally {
            ws.close();
          }
        },
      );
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      await two?.stop();
      await one.stop();
      await sandbox.destroy();
    }
  });
}
