import { assert, assertEquals } from "../../../tests/assert.ts";
import { readBody } from "./provider.ts";

Deno.test("readBody: an endless answer is read up to the bound, then cancelled", async () => {
  let sent = 0;
  let cancelled = false;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      sent += 4096;
      controller.enqueue(new Uint8Array(4096).fill(120)); // "x"
    },
    cancel() {
      cancelled = true;
    },
  });
  const text = await readBody(new Response(endless), 10_000);
  assertEquals(text.length, 10_000);
  assert(cancelled, "the rest of the stream is cancelled");
  assert(sent < 100_000, `read ${sent} bytes`);
});

Deno.test("readBody: a short answer is read whole", async () => {
  assertEquals(await readBody(new Response("ok: accepted")), "ok: accepted");
  assertEquals(await readBody(new Response(null, { status: 204 })), "");
});
