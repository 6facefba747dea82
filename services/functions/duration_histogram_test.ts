import { assert, assertEquals } from "../../tests/assert.ts";
import { BOUNDS, percentile, RELATIVE_ERROR, slotOf, SLOTS } from "./duration_histogram.ts";
import { Rollup } from "./rollup.ts";
import { below, exactPercentile } from "./test_numbers.ts";

Deno.test("duration histogram: slots are [BOUNDS[k-1], BOUNDS[k]), 0 below 0.01 ms, the last one open", () => {
  assertEquals(BOUNDS.length, SLOTS - 1);
  assertEquals(BOUNDS[0], 0.01);
  assert(BOUNDS[SLOTS - 2]! > 300_000, "the slots reach past the longest call");
  assertEquals([slotOf(0), slotOf(0.005), slotOf(below(0.01)), slotOf(0.01)], [0, 0, 0, 1]);
  for (let k = 0; k < BOUNDS.length; k++) {
    assertEquals(slotOf(BOUNDS[k]!), k + 1);
    assertEquals(slotOf(below(BOUNDS[k]!)), k);
  }
  assertEquals(slotOf(1e12), SLOTS - 1);
  assert(Math.abs(RELATIVE_ERROR - 0.0488) < 0.0001);
});

Deno.test("duration histogram: percentiles are within the documented error of percentile_cont", () => {
  // A skewed distribution over five decades, and a narrow one where interpolation between ranks matters.
  const wide = Array.from({ length: 10_001 }, (_, i) => 0.02 * Math.exp((i % 997) / 90) + (i % 13) * 0.001);
  const narrow = Array.from({ length: 7 }, (_, i) => 40 + i * 3.3);
  for (const values of [wide, narrow]) {
    const rollup = new Rollup("f", "f", 0);
    for (const v of values) rollup.add("ok", v, 200);
    const sorted = [...values].sort((a, b) => a - b);
    for (const q of [0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1]) {
      const exact = exactPercentile(sorted, q);
      const got = percentile(rollup.hist, rollup.count, q, rollup.minMs, rollup.maxMs)!;
      assert(Math.abs(got - exact) <= RELATIVE_ERROR * exact, `q=${q}: ${got} vs ${exact}`);
    }
  }
  assertEquals(percentile(new Int32Array(SLOTS), 0, 0.5, Infinity, -Infinity), null);
});

Deno.test("rollup: counts outcomes and status classes, sums durations, merges slot by slot", () => {
  const a = new Rollup("f", "f", 1);
  a.add("ok", 2, 101);
  a.add("error", 3, 500);
  a.add("timeout", 1000, 504);
  a.add("oom", 5, null);
  a.add("crash", 0, 500);
  const b = new Rollup("f", "f", 1);
  b.add("ok", 2, 404);
  a.merge(b);
  assertEquals([a.status1xx, a.status2xx, a.status3xx, a.status4xx, a.status5xx], [1, 0, 0, 1, 3]);
  assertEquals([a.count, a.errors, a.timeouts, a.oom, a.sumMs, a.minMs, a.maxMs], [
    6,
    4,
    1,
    1,
    1012,
    0,
    1000,
  ]);
  assertEquals(a.hist[slotOf(2)], 2);
  assertEquals(a.hist[0], 1);
  const literal = a.histLiteral();
  assertEquals(literal.slice(1, -1).split(",").length, slotOf(1000) + 1);
});
