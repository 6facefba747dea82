import { assertEquals } from "../tests/assert.ts";
import { Semaphore } from "./semaphore.ts";

Deno.test("Semaphore never runs more than its limit and runs everything", async () => {
  const lane = new Semaphore(3);
  let running = 0;
  let peak = 0;
  const done: number[] = [];
  await Promise.all(Array.from({ length: 20 }, (_, i) =>
    lane.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 2));
      running--;
      done.push(i);
    })));
  assertEquals(peak, 3);
  assertEquals(done.length, 20);
  assertEquals(lane.running, 0);
});
