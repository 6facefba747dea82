import { PGlite, type Transaction, types } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import type { Db, Queryable } from "./driver.ts";
import { pglitePipeline } from "./pglite_pipeline.ts";

function wrap(db: PGlite | Transaction): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []) {
      const result = await db.query<T>(text, params);
      return result.rows;
    },
    async exec(text: string) {
      await db.exec(text);
    },
    async execRows(text: string) {
      const results = await db.exec(text);
      return (results.findLast((r) => r.fields.length > 0)?.rows ?? []) as Record<string, unknown>[];
    },
  };
}

/** Opens (creating when new) an embedded PGlite database in `dir`. One process may hold a directory. */
export async function openPglite(dir: string): Promise<Db> {
  await Deno.mkdir(dir, { recursive: true });
  // int8 as a string, as postgres.js returns it: the same SQL gives the same JSON on both drivers.
  // pgvector is loaded so that `create extension vector` works, as on a server that has it (AI gateway).
  const pg = await PGlite.create(dir, {
    parsers: { [types.INT8]: (value: string) => value },
    extensions: { vector },
  });
  const base = wrap(pg);
  return {
    kind: "pglite",
    query: base.query,
    exec: base.exec,
    execRows: base.execRows,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    pipeline: pglitePipeline(pg),
    listen: (channel, onPayload) => pg.listen(channel, onPayload),
    close: () => pg.close(),
  };
}
