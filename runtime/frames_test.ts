import { assertEquals } from "../tests/assert.ts";
import { encodeFrame, FrameReader, FrameWriter } from "./frames.ts";

Deno.test("frames: round trip through arbitrary chunking", () => {
  const frames = [
    encodeFrame({ t: "req", id: 1 }, new Uint8Array([1, 2, 3])),
    encodeFrame({ t: "log", text: "é" }),
    encodeFrame({ t: "res", id: 2 }, new Uint8Array(70_000).fill(7)),
  ];
  const all = new Uint8Array(frames.reduce((n, f) => n + f.byteLength, 0));
  let at = 0;
  for (const f of frames) {
    all.set(f, at);
    at += f.byteLength;
  }
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
  const writes: Uint8Array[] = [];
  const conn = {
    write: (p: Uint8Array) => {
      writes.push(p.slice());
      return Promise.resolve(p.byteLength);
    },
    close() {},
  } as unknown as Deno.Conn;
  const writer = new FrameWriter(conn, () => {
    throw new Error("write failed");
  });
  const turn = () => new Promise((resolve) => setTimeout(resolve, 5));
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
  const writes: Uint8Array[] = [];
  const conn = {
    write: (p: Uint8Array) => {
      writes.push(p.slice());
      return Promise.resolve(p.byteLength);
    },
    close() {},
  } as unknown as Deno.Conn;
  const writer = new FrameWriter(conn, () => {});
  const big = 3 * 1024 * 1024;
  writer.write({ id: 1 }, new Uint8Array(big).fill(1));
  writer.write({ id: 2 }, new Uint8Array(big).fill(2));
  writer.write({ id: 3 }, new Uint8Array([3, 3]));
  writer.write({ id: 4 });
  await new Promise((resolve) => setTimeout(resolve, 5));
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
