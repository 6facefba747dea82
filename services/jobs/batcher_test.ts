import { assertEquals } from "../../tests/assert.ts";
import { RunBatcher } from "./batcher.ts";

Deno.test("run batcher: ids of one turn share KV messages, per project, at most maxIds each", async () => {
  const dir = await Deno.makeTempDir({ prefix: "batcher-test-" });
  const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
  try {
    const got: { project: string; ids: string[] }[] = [];
    const listening = kv.listenQueue((m) => {
      got.push(m as { project: string; ids: string[] });
    });
    const batcher = new RunBatcher(kv, 100);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 150; i++) writes.push(batcher.add("a", `a${i}`));
    writes.push(batcher.add("b", "b0"));
    await Promise.all(writes); // every caller resolves once its message is written
    const deadline = Date.now() + 5000;
    while (got.flatMap((m) => m.ids).length < 151 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const sizes = got.map((m) => `${m.project}:${m.ids.length}`).sort();
    assertEquals(sizes, ["a:100", "a:50", "b:1"]);
    assertEquals(new Set(got.flatMap((m) => m.ids)).size, 151);
    kv.close();
    await listening;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
