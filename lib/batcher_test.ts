import { assertEquals, assertRejects } from "../tests/assert.ts";
import { Batcher } from "./batcher.ts";

Deno.test("Batcher: calls made while a batch runs go together in the next one, results in order", async () => {
  const batches: number[][] = [];
  let release = () => {};
  const batcher = new Batcher<number, number>(async (_key, inputs) => {
    batches.push(inputs);
    if (batches.length === 1) await new Promise<void>((r) => release = r);
    return inputs.map((n) => n * 10);
  }, { max: 100, parallel: 1 });
  const first = batcher.call("a", 1);
  await Promise.resolve(); // the first call starts alone
  const rest = [2, 3, 4].map((n) => batcher.call("a", n));
  release();
  assertEquals(await Promise.all([first, ...rest]), [10, 20, 30, 40]);
  assertEquals(batches, [[1], [2, 3, 4]]);
});

Deno.test("Batcher: keys batch apart, and `max` bounds a batch", async () => {
  const batches: string[] = [];
  const batcher = new Batcher<number, number>(
    (key, inputs) => {
      batches.push(`${key}:${inputs.join(",")}`);
      return Promise.resolve(inputs);
    },
    { max: 2, parallel: 1 },
  );
  await Promise.all([batcher.call("a", 1), batcher.call("b", 2), batcher.call("a", 3), batcher.call("a", 4)]);
  assertEquals(batches.sort(), ["a:1,3", "a:4", "b:2"]);
});

Deno.test("Batcher: a failed result fails its own call; a failed batch fails each of its calls", async () => {
  const perItem = new Batcher<number, number>(
    (_key, inputs) =>
      Promise.resolve(inputs.map((n) => n === 2 ? Promise.reject(new Error("two")) : Promise.resolve(n))),
    { max: 10, parallel: 1 },
  );
  const [one, two] = [perItem.call("k", 1), perItem.call("k", 2)];
  assertEquals(await one, 1);
  await assertRejects(() => two, /two/);
  const whole = new Batcher<number, number>(() => Promise.reject(new Error("down")), {
    max: 10,
    parallel: 1,
  });
  const calls = [whole.call("k", 1), whole.call("k", 2)];
  for (const call of calls) await assertRejects(() => call, /down/);
  // The key's queue is free again: a later call runs.
  const again = new Batcher<number, number>((_k, inputs) => Promise.resolve(inputs), {
    max: 10,
    parallel: 1,
  });
  assertEquals(await again.call("k", 5), 5);
});
