import { assertEquals } from "../../tests/assert.ts";
import { embedLocally } from "./local_embedder.ts";
import { SemanticCache } from "./semantic_cache.ts";

Deno.test("SemanticCache: a project's entries are bounded in bytes, oldest out first, an oversize answer not kept", () => {
  const v = (t: string) => embedLocally(t);
  const dims = v("q1").length;
  const answer = "a".repeat(1000);
  const each = "q1".length + JSON.stringify(answer).length + dims * 4;
  const cache = new SemanticCache<string>({
    threshold: 0.99,
    ttlMs: 60_000,
    maxEntriesPerProject: 100,
    maxBytesPerProject: Math.floor(each * 2.5),
  });
  for (const q of ["q1", "q2", "q3"]) cache.store("p", "part", q, v(q), answer);
  assertEquals(cache.size("p"), 2, "two entries fit the bytes");
  assertEquals(cache.lookup("p", "part", "q1", v("q1")), null, "the oldest went");
  assertEquals(cache.lookup("p", "part", "q3", v("q3"))?.value, answer);
  cache.store("p", "part", "q4", v("q4"), "b".repeat(each * 3));
  assertEquals(cache.size("p"), 2, "an answer larger than the bound is not kept and evicts nothing");
  assertEquals(cache.lookup("p", "part", "q4", v("q4")), null);
  cache.store("other", "part", "q1", v("q1"), answer);
  assertEquals([cache.size("p"), cache.size("other")], [2, 1], "the bound is per project");
});
