import { assert, assertEquals, assertNotEquals } from "../../tests/assert.ts";
import { embedLocally } from "./local_embedder.ts";
import { partitionKey, SemanticCache } from "./semantic_cache.ts";
import { dot } from "./vectors.ts";

const base = {
  project: "p",
  provider: "default",
  model: "m",
  embeddingModel: "e",
  temperature: 0.2,
  context: [{ role: "system" as const, content: "be brief" }],
};

Deno.test("partitionKey: every input but the last user message changes the key", async () => {
  const k = await partitionKey(base);
  assertEquals(await partitionKey({ ...base }), k);
  for (
    const variant of [
      { ...base, project: "q" },
      { ...base, provider: "other" },
      { ...base, model: "m2" },
      { ...base, embeddingModel: "e2" },
      { ...base, temperature: 0.3 },
      { ...base, temperature: undefined },
      { ...base, max_tokens: 10 },
      { ...base, context: [] },
      { ...base, context: [{ role: "user" as const, content: "be brief" }] },
      { ...base, context: [...base.context, { role: "assistant" as const, content: "ok" }] },
    ]
  ) {
    assertNotEquals(await partitionKey(variant), k);
  }
});

Deno.test("SemanticCache: threshold, TTL and the per-project bound", () => {
  const cache = new SemanticCache<string>({ threshold: 0.9, ttlMs: 1000, maxEntriesPerProject: 3 });
  const v = (t: string) => embedLocally(t);
  cache.store("p", "part", "capital of France", v("capital of France"), "Paris");
  assertEquals(cache.lookup("p", "part", "capital of France", v("capital of France")), {
    value: "Paris",
    similarity: 1,
  });
  const reworded = cache.lookup("p", "part", "Capital of France?", v("Capital of France?"));
  assertEquals(reworded?.value, "Paris");
  assertEquals(cache.lookup("p", "part", "capital of Germany", v("capital of Germany")), null);
  assertEquals(cache.lookup("p", "other", "capital of France", v("capital of France")), null);
  assertEquals(cache.lookup("q", "part", "capital of France", v("capital of France")), null);

  for (const t of ["one", "two", "three"]) cache.store("p", "part", t, v(t), t);
  assertEquals(cache.size("p"), 3);
  assertEquals(cache.lookup("p", "part", "capital of France", v("capital of France")), null); // evicted, oldest

  const realNow = Date.now;
  try {
    Date.now = () => realNow() + 2000;
    assertEquals(cache.lookup("p", "part", "two", v("two")), null); // expired
    assertEquals(cache.size("p"), 0);
  } finally {
    Date.now = realNow;
  }
});

Deno.test("embedLocally: deterministic unit vectors; negation and subject keep texts apart", () => {
  const a = embedLocally("Is the bridge safe?");
  assertEquals(Array.from(a), Array.from(embedLocally("is the BRIDGE safe")));
  assert(Math.abs(dot(a, a) - 1) < 1e-6);
  assert(dot(a, embedLocally("Is the bridge not safe?")) < 0.95);
  assert(dot(embedLocally("capital of France"), embedLocally("capital of Germany")) < 0.95);
  assertEquals(Array.from(embedLocally("")).every((x) => x === 0), true);
});

Deno.test("SemanticCache: rows stay matched to their entries through evictions and replacements", () => {
  const cache = new SemanticCache<string>({ threshold: 0.99, ttlMs: 60_000, maxEntriesPerProject: 20 });
  const text = (i: number) => `topic${i} alpha${i % 7} beta${i % 11} gamma${i}`;
  for (let i = 0; i < 50; i++) {
    cache.store("p", i % 2 ? "odd" : "even", text(i), embedLocally(text(i)), `answer ${i}`);
    if (i % 5 === 0) cache.store("p", i % 2 ? "odd" : "even", text(i), embedLocally(text(i)), `answer ${i}b`);
  }
  assertEquals(cache.size("p"), 20);
  for (let i = 30; i < 50; i++) {
    const upper = text(i).toUpperCase(); // not the stored text: the lookup scans the matrix
    const hit = cache.lookup("p", i % 2 ? "odd" : "even", upper, embedLocally(upper));
    assertEquals(hit?.value, i % 5 === 0 ? `answer ${i}b` : `answer ${i}`);
  }
  for (let i = 0; i < 30; i++) {
    const upper = text(i).toUpperCase();
    assertEquals(cache.lookup("p", i % 2 ? "odd" : "even", upper, embedLocally(upper)), null);
  }
});

Deno.test("SemanticCache: a lookup may accept only some entries (a ticket: those whose cost fits)", () => {
  const cache = new SemanticCache<{ answer: string; cost: number }>({
    threshold: 0.5,
    ttlMs: 60_000,
    maxEntriesPerProject: 10,
  });
  const v = (t: string) => embedLocally(t);
  cache.store("p", "part", "capital of France", v("capital of France"), { answer: "long", cost: 500 });
  cache.store("p", "part", "the capital of France", v("the capital of France"), {
    answer: "short",
    cost: 20,
  });
  const fits = (budget: number) => (a: { cost: number }) => a.cost <= budget;
  // The exact text is refused when it costs too much: the next best that fits is served, or nothing.
  assertEquals(
    cache.lookup("p", "part", "capital of France", v("capital of France"), fits(100))?.value.answer,
    "short",
  );
  assertEquals(cache.lookup("p", "part", "capital of France", v("capital of France"), fits(10)), null);
  assertEquals(
    cache.lookup("p", "part", "capital of France", v("capital of France"), fits(1000))?.similarity,
    1,
  );
});
