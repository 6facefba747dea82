import type { Db, Queryable } from "../../db/driver.ts";

/**
 * Runs `fn` for each input in one transaction: one commit for a batch of writes. When the batch fails, each
 * input runs alone, so an error fails only its own call (the writes are conditional or keyed: none is doubled).
 */
export async function eachInOneTransaction<I, R>(
  db: Db,
  inputs: I[],
  fn: (q: Queryable, input: I) => Promise<R>,
): Promise<(R | Promise<R>)[]> {
  if (inputs.length === 1) return [fn(db, inputs[0]!)];
  try {
    return await db.transaction(async (tx) => {
      const results: R[] = [];
      for (const input of inputs) results.push(await fn(tx, input));
      return results;
    });
  } catch {
    return inputs.map((input) => fn(db, input));
  }
}
