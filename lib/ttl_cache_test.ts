import { assertEquals } from "../tests/assert.ts";
import { jsonSize, TtlCache } from "./ttl_cache.ts";

Deno.test("ttl cache: the entry bound evicts the oldest written, expired entries are gone", async () => {
  const cache = new TtlCache<string, number>({ ttlMs: 60_000, maxEntries: 2 });
  cache.set("a", 1);
  cache.set("b", 2);
  assertEquals(cache.get("a"), 1);
  cache.set("c", 3);
  assertEquals([cache.get("a"), cache.get("b"), cache.get("c")], [undefined, 2, 3]);
  cache.set("short", 4, 1);
  await new Promise((r) => setTimeout(r, 5));
  assertEquals(cache.get("short"), undefined);
});

Deno.test("ttl cache: the byte bound evicts the least recently used first", () => {
  const cache = new TtlCache<string, string>({ ttlMs: 60_000, maxEntries: 100, maxBytes: 30 });
  cache.set("a", "x".repeat(10));
  cache.set("b", "x".repeat(10));
  cache.set("c", "x".repeat(10));
  assertEquals(cache.bytes, 30);
  cache.get("a"); // used: b is now the least recently used
  cache.set("d", "x".repeat(15));
  assertEquals([cache.get("a")?.length, cache.get("b"), cache.get("c"), cache.get("d")?.length], [
    10,
    undefined,
    undefined,
    15,
  ]);
  assertEquals(cache.bytes, 25);
});

Deno.test("ttl cache: a key read again and again stays the most recently used; the order follows every read", () => {
  const cache = new TtlCache<string, string>({ ttlMs: 60_000, maxEntries: 100, maxBytes: 30 });
  cache.set("a", "x".repeat(10));
  cache.set("b", "x".repeat(10));
  cache.get("a");
  cache.get("a");
  cache.get("b");
  cache.get("a"); // a, then b: b goes first
  cache.set("c", "x".repeat(10));
  cache.set("d", "x".repeat(10));
  assertEquals([cache.get("a")?.length, cache.get("b"), cache.get("c")?.length, cache.get("d")?.length], [
    10,
    undefined,
    10,
    10,
  ]);
  cache.delete("d");
  cache.set("d", "x".repeat(10)); // d set again is the newest: a read of c moves c after it
  cache.get("c");
  cache.set("e", "x".repeat(10));
  assertEquals([cache.get("a"), cache.get("c")?.length, cache.get("d")?.length], [undefined, 10, 10]);
});

Deno.test("ttl cache: a value larger than the byte bound is not kept, and one that fits alone clears the rest", () => {
  const cache = new TtlCache<string, string>({ ttlMs: 60_000, maxEntries: 100, maxBytes: 20 });
  cache.set("small", "x".repeat(5));
  cache.set("huge", "x".repeat(21));
  assertEquals([cache.get("small")?.length, cache.get("huge")], [5, undefined]);
  assertEquals(cache.bytes, 5);
  cache.set("small", "x".repeat(21)); // replaced by a value too large: the old one is not served either
  assertEquals([cache.get("small"), cache.bytes], [undefined, 0]);
  cache.set("a", "x".repeat(8));
  cache.set("whole", "x".repeat(20));
  assertEquals([cache.get("a"), cache.get("whole")?.length, cache.size, cache.bytes], [undefined, 20, 1, 20]);
});

Deno.test("ttl cache: bytes follow deletes, replacements and expiry; sizeOf is the caller's measure", async () => {
  const cache = new TtlCache<string, { code: string }>({
    ttlMs: 60_000,
    maxEntries: 100,
    maxBytes: 1000,
    sizeOf: (v) => v.code.length * 2,
  });
  cache.set("a", { code: "x".repeat(100) });
  cache.set("b", { code: "x".repeat(50) });
  assertEquals(cache.bytes, 300);
  cache.set("a", { code: "x".repeat(10) });
  assertEquals(cache.bytes, 120);
  cache.deleteWhere((_v, k) => k === "b");
  assertEquals(cache.bytes, 20);
  cache.set("c", { code: "x".repeat(10) }, 1);
  await new Promise((r) => setTimeout(r, 5));
  assertEquals([cache.get("c"), cache.bytes], [undefined, 20]);
  cache.delete("a");
  assertEquals([cache.size, cache.bytes], [0, 0]);
});

Deno.test("ttl cache: the default size is the JSON length, a string's own length", () => {
  assertEquals(jsonSize("abcd"), 4);
  assertEquals(jsonSize({ a: "bc" }), 10);
  assertEquals(jsonSize(null), 4);
  assertEquals(jsonSize(undefined), 0);
  assertEquals(jsonSize(10n), 0);
});
