import { assertEquals } from "../tests/assert.ts";
import { encodeFrame, FrameReader } from "./frames.ts";

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
