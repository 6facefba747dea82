import { assertEquals } from "../tests/assert.ts";
import { CallRing } from "./call_ring.ts";

Deno.test("CallRing holds calls by id through wrap-around and growth", () => {
  const ring = new CallRing<{ id: number; v: string }>(4);
  for (let id = 1; id <= 3; id++) ring.add({ id, v: `c${id}` });
  assertEquals(ring.size, 3);
  assertEquals(ring.get(2)?.v, "c2");
  assertEquals(ring.delete(2), true);
  assertEquals(ring.delete(2), false);
  assertEquals(ring.get(2), undefined);
  // Ids 4..9 wrap past slot 1, still taken by call 1: the ring doubles rather than overwrite it.
  for (let id = 4; id <= 9; id++) ring.add({ id, v: `c${id}` });
  assertEquals(ring.size, 8);
  assertEquals(ring.get(1)?.v, "c1");
  for (let id = 3; id <= 9; id++) assertEquals(ring.get(id)?.v, `c${id}`);
  // An id that maps to a slot holding another call is not there.
  assertEquals(ring.get(1 + 16), undefined);
  assertEquals(ring.delete(1 + 16), false);
  assertEquals(ring.list().map((c) => c.id).sort((a, b) => a - b), [1, 3, 4, 5, 6, 7, 8, 9]);
});

Deno.test("CallRing keeps many calls in flight and forgets them all", () => {
  const ring = new CallRing<{ id: number }>();
  const live: number[] = [];
  for (let id = 1; id <= 10_000; id++) {
    ring.add({ id });
    live.push(id);
    // Calls end out of order: every third one stays for a while.
    if (id % 3 !== 0) ring.delete(live.splice(live.length - 1, 1)[0]!);
    if (live.length > 500) { for (const old of live.splice(0, 250)) assertEquals(ring.delete(old), true); }
  }
  assertEquals(ring.size, live.length);
  for (const id of live) assertEquals(ring.get(id)?.id, id);
  for (const id of live) ring.delete(id);
  assertEquals(ring.size, 0);
  assertEquals(ring.list(), []);
});
