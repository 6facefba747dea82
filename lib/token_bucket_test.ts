import { assertEquals } from "../tests/assert.ts";
import { TokenBucket } from "./token_bucket.ts";

Deno.test("TokenBucket: bursts up to the limit, refills over time, keys are independent", () => {
  const bucket = new TokenBucket({ perMinute: 3 });
  const t0 = 1_000_000;
  assertEquals([1, 2, 3].map(() => bucket.take("a", t0).ok), [true, true, true]);
  assertEquals(bucket.take("a", t0), { ok: false, retryAfterSeconds: 20 });
  assertEquals(bucket.take("b", t0).ok, true);
  assertEquals(bucket.take("a", t0 + 19_000).ok, false);
  assertEquals(bucket.take("a", t0 + 20_000).ok, true);
});

Deno.test("TokenBucket: the number of keys is bounded", () => {
  const bucket = new TokenBucket({ perMinute: 1, maxKeys: 2 });
  bucket.take("a", 0);
  bucket.take("b", 0);
  bucket.take("c", 0); // forgets "a"
  assertEquals(bucket.take("a", 0).ok, true);
});

Deno.test("TokenBucket: the least recently used key is the one forgotten", () => {
  const bucket = new TokenBucket({ perMinute: 1, maxKeys: 2 });
  bucket.take("a", 0);
  bucket.take("b", 0);
  assertEquals(bucket.take("a", 1_000).ok, false); // used again a second later: now the younger key
  bucket.take("c", 1_000); // forgets "b"
  assertEquals(bucket.take("a", 1_000).ok, false, "a is remembered, still empty");
  assertEquals(bucket.take("b", 1_000).ok, true, "b was forgotten: a full bucket again");
});
