import { assert, assertEquals } from "../../tests/assert.ts";
import { chunkText } from "./chunker.ts";

Deno.test("chunkText: bounded chunks that overlap and cover the text", () => {
  const words = Array.from({ length: 400 }, (_, i) => `word${i}`);
  const text = words.join(" ");
  const chunks = chunkText(text, { size: 200, overlap: 50 });
  assert(chunks.length > 1);
  for (const c of chunks) assert(c.length <= 200, `chunk of ${c.length}`);
  for (let i = 1; i < chunks.length; i++) {
    const prevWords = chunks[i - 1]!.split(" ");
    const first = chunks[i]!.split(" ")[0]!;
    assert(prevWords.includes(first), `chunk ${i} starts inside the previous one`);
  }
  const seen = new Set(chunks.flatMap((c) => c.split(" ")));
  for (const w of words) assert(seen.has(w), `${w} is in a chunk`);
});

Deno.test("chunkText: short, blank and invalid options", () => {
  assertEquals(chunkText("  short text \r\n"), ["short text"]);
  assertEquals(chunkText("   "), []);
  let threw = false;
  try {
    chunkText("x", { size: 10, overlap: 10 });
  } catch {
    threw = true;
  }
  assert(threw);
});
