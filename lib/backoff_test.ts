import { assertEquals } from "../tests/assert.ts";
import { backoffMs, retryAfterMs } from "./backoff.ts";

Deno.test("backoff grows exponentially with equal jitter and a cap; Retry-After parses", () => {
  const at = (attempt: number, r: number) =>
    backoffMs(attempt, { baseMs: 1000, capMs: 8000, random: () => r });
  assertEquals([at(1, 0), at(1, 0.999)], [500, 1000]);
  assertEquals([at(2, 0), at(3, 0), at(4, 0), at(10, 0)], [1000, 2000, 4000, 4000]);
  assertEquals(at(10, 0.5), 6000);
  assertEquals(retryAfterMs("3"), 3000);
  assertEquals(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
  assertEquals([retryAfterMs(null), retryAfterMs("soon")], [undefined, undefined]);
});
