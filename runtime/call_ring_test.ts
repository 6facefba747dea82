import { assertEquals, assertMatch } from "../tests/assert.ts";
import { CallRing } from "./call_ring.ts";

Deno.test("CallRing holds calls by id past wrap-around, a slow call's slot included", () => {
  const ring = new CallRing<{ id: number; v: string }>(4);
  for (let id = 1; id <= 3; id++) ring.add({ id, v: `c${id}` });
  assertEquals(ring.size, 3);
  assertEquals(ring.get(2)?.v, "c2");
  assertEquals(ring.delete(2), true);
  assertEquals(ring.delete(2), false);
  assertEquals(ring.get(2), undefined);
  // Ids 4..9 wrap past slot 1 and 3, still taken by calls 1 and 3: those go aside, nothing is overwritten.
  for (let id = 4; id <= 9; id++) ring.add({ id, v: `c${id}` });
  assertEquals(ring.size, 8);
  for (const id of [1, 3, 4, 5, 6, 7, 8, 9]) assertEquals(ring.get(id)?.v, `c${id}`);
  assertEquals(ring.list().map((c) => c.id).sort((a, b) => a - b), [1, 3, 4, 5, 6, 7, 8, 9]);
  assertEquals(ring.some((c) => c.id === 9), true);
  assertEquals(ring.some((c) => c.id === 2), false);
  for (const id of [9, 1, 5, 3, 4, 8, 6, 7]) assertEquals(ring.delete(id), true);
  assertEquals(ring.size, 0);
  assertEquals(ring.list(), []);
});

Deno.test("CallRing answers nothing for an id it does not hold, whatever the peer sent", () => {
  const ring = new CallRing<{ id: number }>(8);
  ring.add({ id: 1 });
  const forged = [NaN, -1, 1.5, 1 + 2 ** 32, 9, Infinity, -Infinity, "1" as unknown as number, null as never];
  for (const id of forged) {
    assertEquals(ring.get(id), undefined);
    assertEquals(ring.delete(id), false);
  }
  assertEquals(ring.size, 1);
  assertEquals(ring.get(1)?.id, 1);
  let refused = "";
  try {
    ring.add({ id: 1 });
  } catch (err) {
    refused = String(err);
  }
  assertMatch(refused, /in flight already/);
  assertEquals(ring.size, 1);
});

Deno.test("CallRing keeps many calls in flight, some slow, and forgets them all", () => {
  const ring = new CallRing<{ id: number }>(16);
  const live: number[] = [];
  for (let id = 1; id <= 10_000; id++) {
    ring.add({ id });
    live.push(id);
    // Calls end out of order: every third one stays for a while, and call 1 until the end.
    if (id % 3 !== 0) ring.delete(live.splice(live.length - 1, 1)[0]!);
    if (live.length > 500) { for (const old of live.splice(1, 250)) assertEquals(ring.delete(old), true); }
  }
  assertEquals(ring.size, live.length);
  for (const id of live) assertEquals(ring.get(id)?.id, id);
  for (const id of live) ring.delete(id);
  assertEquals(ring.size, 0);
  assertEquals(ring.list(), []);
});
