import { assert, assertEquals } from "../../../tests/assert.ts";
import { classifyHttp, readBody, thrownResult } from "./provider.ts";

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

Deno.test("a failed attempt always says why: the status and an excerpt, or the network error", () => {
  const answered = (status: number, body: string) =>
    classifyHttp("webhook", new Response(body, { status }), body, {}).error;
  assertEquals(answered(500, "database\n  is down"), "webhook answered HTTP 500: database is down");
  assertEquals(answered(503, ""), "webhook answered HTTP 503");
  assertEquals(answered(500, "x".repeat(5000)), `webhook answered HTTP 500: ${"x".repeat(200)}…`);
  // A name with two addresses, both refused: node's AggregateError has an empty message of its own.
  const both = Object.assign(
    new AggregateError([
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }),
      Object.assign(new Error("connect ECONNREFUSED ::1:9"), { code: "ECONNREFUSED" }),
    ], ""),
    { code: "ECONNREFUSED" },
  );
  assertEquals(
    thrownResult("webhook", both, {}).error,
    "webhook could not be reached: connect ECONNREFUSED 127.0.0.1:9; connect ECONNREFUSED ::1:9",
  );
  const bare = Object.assign(new Error(""), { code: "ECONNRESET" });
  assertEquals(thrownResult("webhook", bare, {}).error, "webhook could not be reached: ECONNRESET");
  assertEquals(
    thrownResult("webhook", new TypeError(""), {}).error,
    "webhook could not be reached: TypeError",
  );
});
