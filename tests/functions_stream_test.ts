// Streamed answers (#27): a function's answer goes back on /functions/v1 and raw invokes as it is written, over
// real HTTP, under the response size limit and the time limit (the whole stream), and a client that leaves
// cancels the function's stream.
import { assert, assertEquals } from "./assert.ts";
import { json, startPlatform, within } from "./harness.ts";

const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

// Writes event 0, waits until `/go` is called (the test calls it once it received event 0), then events 1 and
// 2, 300 ms apart. A platform that buffers the answer never shows event 0 before `/go`: the test would hang.
const SSE = `
let go;
const signal = new Promise((resolve) => go = resolve);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export default async (req) => {
  if (new URL(req.url).pathname.endsWith("/go")) { go(); return new Response("sent"); }
  const enc = new TextEncoder();
  const body = new ReadableStream({
    async start(c) {
      c.enqueue(enc.encode("data: 0\\n\\n"));
      await signal;
      await sleep(300);
      c.enqueue(enc.encode("data: 1\\n\\n"));
      await sleep(300);
      c.enqueue(enc.encode("data: 2\\n\\n"));
      c.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
};`;

// One MiB every 20 ms, without end: past the response size limit.
const HUGE = `
export default () => new Response(new ReadableStream({
  async pull(c) { await new Promise((r) => setTimeout(r, 20)); c.enqueue(new Uint8Array(1024 * 1024)); },
}), { headers: { "content-type": "application/octet-stream" } });`;

// An event every 100 ms, without end; `/state` tells whether the stream was cancelled.
const ENDLESS = `
let cancelled = false;
export default (req) => {
  if (new URL(req.url).pathname.endsWith("/state")) return new Response(cancelled ? "cancelled" : "running");
  const enc = new TextEncoder();
  let timer;
  return new Response(new ReadableStream({
    start(c) { timer = setInterval(() => c.enqueue(enc.encode("data: tick\\n\\n")), 100); },
    cancel() { clearInterval(timer); cancelled = true; console.log("stream cancelled"); },
  }), { headers: { "content-type": "text/event-stream" } });
};`;

/** Reads `reader` until `text` holds `want`, failing after `ms` (a buffered answer never shows it). */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  want: string,
  ms = 10_000,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`"${want}" did not arrive within ${ms} ms: ${text}`)), ms);
  });
  try {
    while (!text.includes(want)) {
      const r = await Promise.race([reader.read(), late]);
      if (r.done) throw new Error(`stream ended before "${want}": ${text}`);
      text += decoder.decode(r.value, { stream: true });
    }
    return text;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a stream to its end or its failure: the bytes read, and whether it failed. The streams read here end
 * only when the platform cuts them: a liveness bound (120 s, not a timing claim) cancels one it never cuts.
 */
async function drain(
  body: ReadableStream<Uint8Array>,
  what: string,
): Promise<{ bytes: number; failed: boolean }> {
  const reader = body.getReader();
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), 120_000));
  try {
    while (true) {
      const r = await Promise.race([reader.read(), late]).catch(() => null); // null: the stream failed
      if (r === null) return { bytes, failed: true };
      if (r === "late") {
        await reader.cancel().catch(() => {});
        throw new Error(`Still waiting after 120 s: ${what}`);
      }
      if (r.done) return { bytes, failed: false };
      bytes += r.value.byteLength;
    }
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("functions: answers stream on /functions/v1 and raw invoke, within their limits", async (t) => {
  const p = await startPlatform({ INVOKE_RATE_PER_MIN: "1000", FUNCTIONS_TIMEOUT_MARGIN_MS: "1000" });
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, p.handler);
  const base = `http://127.0.0.1:${server.addr.port}`;
  const key = { apikey: p.publicKey, authorization: `Bearer ${p.publicKey}` };
  const deploy = async (name: string, code: string, permissions: Record<string, unknown> = {}) => {
    const r = await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "deno", code, permissions },
      }),
    );
    assert(r.status === 201 || r.status === 200, `deploy ${name}: ${JSON.stringify(r.body)}`);
  };
  const stats = async (name: string) =>
    (await json(await p.fetch(`/v1/functions/${name}/stats?window=1h`, { headers: { apikey: p.secretKey } })))
      .body.data;
  /** Waits until `name` has `count` records (they are written when the stream ends). */
  const recorded = async (name: string, count: number) => {
    for (let i = 0; i < 100; i++) {
      const s = await stats(name);
      if (s.count >= count) return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    return await stats(name);
  };
  try {
    await deploy("sse", SSE);
    await deploy("huge", HUGE);
    await deploy("endless", ENDLESS, { timeout_secs: 2 });

    await t.step("SSE events arrive one by one on /functions/v1", async () => {
      const res = await fetch(`${base}/functions/v1/sse`, { headers: key });
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-type"), "text/event-stream");
      const reader = res.body!.getReader();
      // Event 0 arrives while the function still waits for the signal: it has not written events 1 and 2.
      const first = await readUntil(reader, "data: 0\n\n");
      assertEquals(first, "data: 0\n\n");
      const go = await fetch(`${base}/functions/v1/sse/go`, { method: "POST", headers: key });
      assertEquals(await go.text(), "sent");
      const rest = await readUntil(reader, "data: 2\n\n");
      assertEquals(rest, "data: 1\n\ndata: 2\n\n");
      assertEquals((await within(reader.read(), 30_000, "the SSE stream's end")).done, true);
      const s = await recorded("sse", 2);
      assertEquals([s.count, s.errors, s.timeouts], [2, 0, 0]);
    });

    await t.step("raw invoke streams too; the envelope takes the answer whole", async () => {
      const raw = await fetch(`${base}/v1/functions/sse/invoke`, {
        method: "POST",
        headers: { ...key, "x-service-invoke-mode": "raw" },
      });
      const reader = raw.body!.getReader();
      assertEquals(await readUntil(reader, "data: 0\n\n"), "data: 0\n\n");
      await fetch(`${base}/functions/v1/sse/go`, { method: "POST", headers: key }).then((r) => r.text());
      assertEquals(await readUntil(reader, "data: 2\n\n"), "data: 1\n\ndata: 2\n\n");
      // Envelope: the answer is complete before it is sent (the signal is sent while the call waits for it).
      const pending = p.fetch("/v1/functions/sse/invoke", { method: "POST", headers: key });
      await new Promise((r) => setTimeout(r, 200));
      await fetch(`${base}/functions/v1/sse/go`, { method: "POST", headers: key }).then((r) => r.text());
      const env = await json(await pending);
      assertEquals([env.status, env.body.data.body], [200, "data: 0\n\ndata: 1\n\ndata: 2\n\n"]);
    });

    await t.step("a stream past the response size limit is cut and recorded as failed", async () => {
      const res = await fetch(`${base}/functions/v1/huge`, { headers: key });
      assertEquals(res.status, 200);
      const { bytes, failed } = await drain(res.body!, "the cut of the stream past the size limit");
      assert(failed, "the stream is cut, not ended");
      assert(bytes <= MAX_RESPONSE_BYTES, `${bytes} bytes passed`);
      const s = await recorded("huge", 1);
      assertEquals([s.count, s.errors], [1, 1]);
    });

    await t.step("a stream that never ends is cut at timeout_secs (the whole stream)", async () => {
      const started = Date.now();
      const res = await fetch(`${base}/functions/v1/endless`, { headers: key });
      const { bytes, failed } = await drain(res.body!, "the cut of the endless stream at timeout_secs");
      const took = Date.now() - started;
      assert(failed, "the stream is cut, not ended");
      assert(bytes > 0, "events passed before the cut");
      assert(took >= 1900, `cut after ${took} ms, before timeout_secs`); // not early; late is bounded by drain()
      const s = await recorded("endless", 1);
      assertEquals([s.count, s.timeouts], [1, 1]);
    });

    await t.step("a client that leaves cancels the function's stream", async () => {
      const res = await fetch(`${base}/functions/v1/endless`, { headers: key });
      const reader = res.body!.getReader();
      await readUntil(reader, "data: tick\n\n");
      await reader.cancel();
      let state = "";
      for (let i = 0; i < 50 && state !== "cancelled"; i++) {
        await new Promise((r) => setTimeout(r, 100));
        state = await (await fetch(`${base}/functions/v1/endless/state`, { headers: key })).text();
      }
      assertEquals(state, "cancelled");
      const s = await recorded("endless", 3);
      assertEquals([s.count, s.timeouts], [3, 1], "the left call is recorded, not as a failure");
    });
  } finally {
    try {
      // A liveness bound: a stream a failed step left open would hold the shutdown forever.
      await within(server.shutdown(), 60_000, "the server's shutdown (a stream left open?)");
    } finally {
      await p.close();
    }
  }
});
