// Streamed answers at the runtime's level: a reader that does not read holds the function back (the worker
// sends at most STREAM_WINDOW_BYTES ahead of it), and a whole answer still comes whole.
import { assert, assertEquals, within } from "../tests/assert.ts";
import { STREAM_WINDOW_BYTES } from "./protocol.ts";
import { Runtime } from "./supervisor.ts";
import { GET, OPTIONS, spec, text } from "./testing.ts";

// Pulled as fast as the platform takes it; `/count` tells how many bytes the function was asked for.
const FAST = `
let produced = 0;
export default (req) => {
  if (new URL(req.url).pathname === "/count") return new Response(String(produced));
  return new Response(new ReadableStream({
    pull(c) { produced += 65536; c.enqueue(new Uint8Array(65536)); },
  }, { highWaterMark: 0 }));
};`;

Deno.test("runtime: a streamed answer waits for its reader (backpressure), and can be cancelled", async () => {
  const rt = await Runtime.create(OPTIONS, () => {});
  try {
    const fn = spec("fast", FAST);
    const whole = await rt.invoke(fn, { ...GET, url: "http://localhost/count" });
    assertEquals(text(whole), "0", "an answer complete at once comes whole");
    const res = await rt.invoke(fn, { ...GET, stream: true });
    assert(res.outcome === "ok" && "ended" in res, "a stream");
    await new Promise((r) => setTimeout(r, 500)); // nothing read: the function is held back
    const count = Number(text(await rt.invoke(fn, { ...GET, url: "http://localhost/count" })));
    assert(count <= STREAM_WINDOW_BYTES + 4 * 65536, `the function wrote ${count} bytes for nobody`);
    const reader = res.body.getReader();
    let read = 0;
    // Liveness bounds (30 s), not timing claims: a stream that stalls, or an end that never comes, fails here.
    while (read < 4 * STREAM_WINDOW_BYTES) {
      const chunk = await within(reader.read(), 30_000, `the stream's next chunk after ${read} bytes`);
      read += chunk.value!.byteLength;
    }
    await reader.cancel();
    assertEquals(await within(res.ended, 30_000, "the stream's end after the cancel"), {
      outcome: "ok",
      cancelled: true,
    });
  } finally {
    await within(rt.close(), 60_000, "the runtime's close");
  }
});
