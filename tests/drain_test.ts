import { assert, assertEquals } from "./assert.ts";
import { json, makeSandbox, spawnPlatform, within } from "./harness.ts";
import { WsClient } from "./realtime_client.ts";

/** A server that holds each request until `release()`: a function calling it stays in flight until then. */
function gate() {
  const arrived = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    arrived.resolve();
    await released.promise;
    return new Response("done");
  });
  return {
    port: server.addr.port,
    arrived: arrived.promise,
    release: () => released.resolve(),
    close: () => server.shutdown(),
  };
}

/** Reads an SSE body as text until `done` says the text so far is enough, or the stream ends. */
function readSse(body: ReadableStream<Uint8Array>, done: (text: string) => boolean) {
  let text = "";
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  return {
    async until(more: (text: string) => boolean = done): Promise<{ text: string; ended: boolean }> {
      while (!more(text)) {
        const chunk = await reader.read();
        if (chunk.done) return { text, ended: true };
        text += chunk.value;
      }
      return { text, ended: false };
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

// Each wait below is bounded (LIVE_MS), so that a platform that stops answering fails this test with the wait's
// name and the platform's last output instead of holding the whole suite.
const LIVE_MS = 120_000;

Deno.test("SIGTERM drains: readiness 503 at once, streams closed to reconnect, the request in flight finishes", async (t) => {
  const held = gate();
  // A long delay, cut short by a second signal: the steps between the two signals see the listener open.
  const sandbox = await makeSandbox({ DRAIN_DELAY_MS: "300000", FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1" });
  const child = await spawnPlatform(sandbox.env);
  const headers = { apikey: sandbox.secretKey, "content-type": "application/json" };
  let ws: WsClient | undefined;
  let sse: ReturnType<typeof readSse> | undefined;
  try {
    const deployed = await within(
      fetch(`${child.url}/v1/functions`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          name: "slow",
          runtime: "deno",
          // The longest limit: a start slowed by a loaded machine must not end the call the test holds.
          permissions: { allow_net: [`127.0.0.1:${held.port}`], timeout_secs: 300 },
          code:
            `export default async () => new Response(await (await fetch("http://127.0.0.1:${held.port}/")).text());`,
        }),
      }).then(json),
      LIVE_MS,
      "the deploy",
    );
    assertEquals(deployed.status, 201, JSON.stringify(deployed.body));
    ws = await within(
      WsClient.connect(`${child.url.replace("http", "ws")}/v1/realtime/ws?apikey=${sandbox.publicKey}`),
      LIVE_MS,
      "the WebSocket's opening",
    );
    await ws.subscribe({ channel: "room", broadcast: { self: false } });
    const stream = await within(
      fetch(
        `${child.url}/v1/realtime/sse?${new URLSearchParams({
          apikey: sandbox.publicKey,
          channel: "default:room",
        })}`,
      ),
      LIVE_MS,
      "the SSE stream's opening",
    );
    assertEquals(stream.status, 200);
    sse = readSse(stream.body!, (text) => text.includes("event: subscribed"));
    assertEquals((await within(sse.until(), LIVE_MS, "the SSE subscription")).ended, false);
    const inFlight = fetch(`${child.url}/v1/functions/slow/invoke`, {
      method: "POST",
      headers,
      body: "{}",
    }).then(json);
    // The function reaches the held server, unless its call ends first (then the test says how it ended).
    const first = await within(
      Promise.race([held.arrived.then(() => undefined), inFlight]),
      LIVE_MS,
      "the function's call to reach the held server",
    );
    assertEquals(
      first,
      undefined,
      `the call ended before it reached the held server: ${JSON.stringify(first)}`,
    );

    await t.step(
      "on the first signal, readiness answers 503 while liveness and the listener stay up",
      async () => {
        child.process.kill("SIGTERM");
        await within(
          (async () => {
            while (!child.output.some((l) => l.includes('"msg":"shutting down"'))) {
              await new Promise((r) => setTimeout(r, 20));
            }
          })(),
          LIVE_MS,
          "the platform's shutting-down line",
        );
        const ready = await json(await fetch(`${child.url}/v1/ready`));
        assertEquals([ready.status, ready.body.error.code], [503, "SERVICE_UNAVAILABLE"]);
        assertEquals(ready.body.error.message, "The platform is shutting down");
        const health = await json(await fetch(`${child.url}/v1/health`));
        assertEquals([health.status, health.body.data.status], [200, "ok"]);
        assertEquals(ws!.closeEvent, undefined, "realtime clients stay until the listener closes");
      },
    );

    await t.step("when the listener closes, WebSocket clients get 1001 and SSE streams end", async () => {
      child.process.kill("SIGTERM"); // a second signal ends the delay
      const closed = await ws!.waitClosed(30_000);
      assertEquals(closed.code, 1001);
      const rest = await within(sse!.until(() => false), LIVE_MS, "the SSE stream's end");
      assert(rest.ended, "the SSE stream ends, so that EventSource reconnects");
      await assertRefused(child.port);
    });

    await t.step("the request in flight is answered, then the process exits 0", async () => {
      held.release();
      const answer = await within(inFlight, LIVE_MS, "the answer to the call in flight");
      assertEquals(answer.status, 200, JSON.stringify(answer.body));
      const status = await within(child.stop("SIGTERM"), LIVE_MS, "the platform's exit after the drain");
      assertEquals(status.code, 0);
      assert(child.output.some((l) => l.includes('"msg":"draining"')));
      assert(!child.output.some((l) => l.includes("shutting down with requests in flight")));
    });
  } catch (err) {
    console.error(`The platform's last output:\n${child.output.slice(-80).join("\n")}`);
    throw err;
  } finally {
    held.release();
    await within(sse?.cancel() ?? Promise.resolve(), LIVE_MS, "the SSE reader's cancel").catch(() => {});
    await ws?.close().catch(() => {});
    await within(child.stop("SIGKILL"), LIVE_MS, "the platform's exit on SIGKILL and its pipes' end");
    await held.close();
    await sandbox.destroy();
  }
});

/** Fails unless a new TCP connection to `port` is refused: the listener is closed. */
async function assertRefused(port: number): Promise<void> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
  } catch (err) {
    assert(err instanceof Deno.errors.ConnectionRefused, String(err));
    return;
  }
  throw new Error("The listener still accepts connections");
}
