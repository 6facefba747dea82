import { assertEquals } from "../tests/assert.ts";
import { encodeFrame, FrameReader, FrameWriter } from "./frames.ts";
import { concatBytes } from "../lib/encoding.ts";

/** A connection that keeps a copy of every write. */
function recordingConn(): { writes: Uint8Array[]; conn: Deno.Conn } {
  const writes: Uint8Array[] = [];
  const conn = {
    write: (p: Uint8Array) => {
      writes.push(p.slice());
      return Promise.resolve(p.byteLength);
    },
    close() {},
  } as unknown as Deno.Conn;
  return { writes, conn };
}

/**
 * Lets the writer's flushes run: a few turns of setImmediate, which it flushes on (a timer could fire before
 * them on a busy machine, and the test would look before the write).
 */
async function turn(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

Deno.test("frames: round trip through arbitrary chunking", () => {
  const frames = [
    encodeFrame({ t: "req", id: 1 }, new Uint8Array([1, 2, 3])),
    encodeFrame({ t: "log", text: "é" }),
    encodeFrame({ t: "res", id: 2 }, new Uint8Array(70_000).fill(7)),
  ];
  const all = concatBytes(frames);
  for (const size of [1, 7, 4096, all.byteLength]) {
    const reader = new FrameReader();
    const out = [];
    for (let i = 0; i < all.byteLength; i += size) out.push(...reader.push(all.slice(i, i + size)));
    assertEquals(out.map((f) => f.header), [{ t: "req", id: 1 }, { t: "log", text: "é" }, {
      t: "res",
      id: 2,
    }]);
    assertEquals(out[0]!.body, new Uint8Array([1, 2, 3]));
    assertEquals(out[1]!.body, null);
    assertEquals(out[2]!.body!.byteLength, 70_000);
  }
});

Deno.test("frames: the frames of one event-loop turn leave in one write, in order", async () => {
  const { writes, conn } = recordingConn();
  const writer = new FrameWriter(conn, () => {
    throw new Error("write failed");
  });
  writer.write({ id: 1 });
  writer.write({ id: 2 }, new Uint8Array([9, 9]));
  writer.write({ id: 3 });
  await turn();
  writer.write({ id: 4 });
  await turn();
  assertEquals(writes.length, 2);
  const reader = new FrameReader();
  assertEquals(reader.push(writes[0]!).map((f) => [f.header.id, f.body?.byteLength ?? 0]), [[1, 0], [2, 2], [
    3,
    0,
  ]]);
  assertEquals(reader.push(writes[1]!).map((f) => f.header.id), [4]);
});

Deno.test("frames: a batch keeps bodies apart and within its size; a malformed batch is refused", async () => {
  const { writes, conn } = recordingConn();
  const writer = new FrameWriter(conn, () => {});
  const big = 3 * 1024 * 1024;
  writer.write({ id: 1 }, new Uint8Array(big).fill(1));
  writer.write({ id: 2 }, new Uint8Array(big).fill(2));
  writer.write({ id: 3 }, new Uint8Array([3, 3]));
  writer.write({ id: 4 });
  await turn();
  assertEquals(writes.length, 1);
  const frames = new FrameReader().push(writes[0]!);
  assertEquals(frames.map((f) => [f.header.id, f.body?.byteLength ?? 0]), [[1, big], [2, big], [3, 2], [
    4,
    0,
  ]]);
  assertEquals(frames[1]!.body![big - 1], 2);
  assertEquals(frames[0]!.body![big - 1], 1);
  assertEquals([...frames[2]!.body!], [3, 3], "each body is exactly its own bytes");
  const bad = encodeFrame({ t: "batch", frames: [{ id: 1 }], sizes: [5] }, new Uint8Array(2));
  let error = "";
  try {
    new FrameReader().push(bad);
  } catch (err) {
    error = (err as Error).message;
  }
  assertEquals(error, "Malformed batch frame");
});

Deno.test("frames: bodies read earlier stay intact while later chunks arrive in any split", () => {
  const frames = Array.from(
    { length: 40 },
    (_, i) => ({ header: { id: i }, body: new Uint8Array(i * 997).fill(i) }),
  );
  const stream = concatBytes(frames.map((f) => encodeFrame(f.header, f.body)));

  for (const step of [1, 7, 4096, 65536]) {
    const reader = new FrameReader();
    const got: { header: Record<string, unknown>; body: Uint8Array | null }[] = [];
    for (let i = 0; i < stream.byteLength; i += step) got.push(...reader.push(stream.slice(i, i + step)));
    assertEquals(got.length, frames.length, `chunks of ${step}`);
    for (const [i, f] of got.entries()) {
      assertEquals(f.header.id, i);
      assertEquals(f.body?.byteLength ?? 0, i * 997);
      if (f.body) assertEquals(f.body.every((b) => b === i), true, `body ${i}, chunks of ${step}`);
    }
  }
});

Deno.test("frames: a peer's frame or batch above the reader's bounds is refused", () => {
  const reader = new FrameReader(1024);
  let error = "";
  try {
    reader.push(encodeFrame({ t: "res" }, new Uint8Array(2048)));
  } catch (err) {
    error = (err as Error).message;
  }
  assertEquals(error, "Malformed frame");
  const many = encodeFrame({
    t: "batch",
    frames: Array(5000).fill({ t: "log" }),
    sizes: Array(5000).fill(0),
  });
  error = "";
  try {
    new FrameReader().push(many);
  } catch (err) {
    error = (err as Error).message;
  }
  assertEquals(error, "Malformed batch frame");
});

Deno.test("frames: a writer splits a turn of many frames into batches a reader accepts", async () => {
  const { writes, conn } = recordingConn();
  const writer = new FrameWriter(conn, () => {});
  for (let i = 0; i < 10_000; i++) writer.write({ t: "log", i });
  await turn();
  const reader = new FrameReader();
  const got = writes.flatMap((w) => reader.push(w));
  assertEquals(got.map((f) => f.header.i), Array.from({ length: 10_000 }, (_, i) => i));
});
