import { assert, assertEquals } from "../../tests/assert.ts";
import { Hnsw } from "./hnsw.ts";
import { dot, normalize } from "./vectors.ts";

// Seeded vectors in clusters, the shape of embeddings: neighbours are close, the rest far.
function corpus(n: number, dims: number, seed = 7): Float32Array[] {
  let s = seed;
  const rand = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const centres = Array.from({ length: 40 }, () => Array.from({ length: dims }, () => rand() - 0.5));
  return Array.from({ length: n }, (_, i) => {
    const c = centres[i % centres.length]!;
    return normalize(c.map((x) => x + (rand() - 0.5) * 0.8));
  });
}

function exactTop(
  vectors: Float32Array[],
  query: Float32Array,
  k: number,
  skip = new Set<number>(),
): number[] {
  return vectors.map((v, i) => [dot(v, query), i] as const).filter(([, i]) => !skip.has(i))
    .sort((a, b) => b[0] - a[0]).slice(0, k).map(([, i]) => i);
}

function recall(index: Hnsw, vectors: Float32Array[], queries: Float32Array[], skip = new Set<number>()) {
  let hits = 0;
  for (const q of queries) {
    const exact = new Set(exactTop(vectors, q, 10, skip));
    hits += index.search(q, 10).filter((h) => exact.has(h.key)).length;
  }
  return hits / (queries.length * 10);
}

Deno.test("hnsw: recall@10 against the exact scan, removals, serialization", () => {
  const vectors = corpus(3000, 64);
  const queries = corpus(50, 64, 99);
  const index = new Hnsw(64);
  vectors.forEach((v, i) => index.add(i, v));
  assertEquals(index.liveCount, 3000);
  const r = recall(index, vectors, queries);
  assert(r >= 0.9, `recall@10 ${r}`);

  const whole = Hnsw.deserialize(index.serialize(), 64, (key) => vectors[key])!;
  for (const q of queries) assertEquals(whole.search(q, 10), index.search(q, 10), "the same graph");

  const top = index.search(queries[0]!, 3);
  assertEquals(top[0]!.key, exactTop(vectors, queries[0]!, 1)[0]);
  assert(Math.abs(top[0]!.score - dot(vectors[top[0]!.key]!, queries[0]!)) < 1e-5, "score is the cosine");

  const gone = new Set(top.map((h) => h.key));
  for (const key of gone) assert(index.remove(key));
  assert(!index.remove(top[0]!.key), "a second removal finds nothing");
  assert(index.search(queries[0]!, 10).every((h) => !gone.has(h.key)), "removed keys never come back");
  assert(recall(index, vectors, queries, gone) >= 0.9);

  // Read back, a removed key's vector is gone with its row: the tombstone routes less well, recall holds.
  const bytes = index.serialize();
  const back = Hnsw.deserialize(bytes, 64, (key) => vectors[key]);
  assert(back);
  assertEquals(back.liveCount, 3000 - gone.size);
  assert(recall(back, vectors, queries, gone) >= 0.9);
  const lacking = Hnsw.deserialize(bytes, 64, (key) => key === 5 ? undefined : vectors[key])!;
  assertEquals(lacking.liveCount, 3000 - gone.size - 1, "a key without a vector is a tombstone");
  assert(lacking.search(vectors[5]!, 10).every((h) => h.key !== 5));
  assertEquals(Hnsw.deserialize(bytes, 32, (key) => vectors[key]), null, "other dimensions");
  assertEquals(Hnsw.deserialize(bytes.subarray(0, 100), 64, (key) => vectors[key]), null, "truncated");
});

Deno.test("hnsw: re-adding a key replaces its vector", () => {
  const vectors = corpus(200, 16);
  const index = new Hnsw(16);
  vectors.forEach((v, i) => index.add(i, v));
  index.add(0, vectors[1]!);
  assertEquals(index.liveCount, 200);
  const hits = index.search(vectors[1]!, 2).map((h) => h.key).sort();
  assertEquals(hits, [0, 1]);
});
