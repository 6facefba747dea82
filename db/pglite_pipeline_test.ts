import { PGlite } from "@electric-sql/pglite";
import { assert, assertEquals } from "../tests/assert.ts";
import { NAME_PREFIX, pglitePipeline } from "./pglite_pipeline.ts";

/** Our prepared statements in the engine's one session: text → name. */
async function prepared(pg: PGlite): Promise<Map<string, string>> {
  const { rows } = await pg.query<{ name: string; statement: string }>(
    "select name, statement from pg_prepared_statements where name like $1 order by name",
    [`${NAME_PREFIX}%`],
  );
  return new Map(rows.map((r) => [r.statement, r.name]));
}

Deno.test("pglite pipeline: each text is prepared once, bounded, and survives user DEALLOCATE and PREPARE", async (t) => {
  const pg = await PGlite.create();
  try {
    await pg.exec("create table t (n int)");
    const pipeline = pglitePipeline(pg, { maxPrepared: 4 });
    const select = { sql: "select $1::int + 1 as n", params: [1] };

    await t.step("a text seen before binds its statement: same rows, one statement", async () => {
      for (let i = 0; i < 3; i++) {
        assertEquals(await pipeline([select], { end: "commit" }), [[{ n: 2 }]]);
      }
      const names = await prepared(pg);
      assert(names.has(select.sql), [...names.keys()].join("; "));
      assertEquals([...names.keys()].sort(), ["begin", "commit", select.sql].sort());
    });

    await t.step("past the bound, the least recently used statement is closed", async () => {
      for (let i = 0; i < 6; i++) {
        const rows = await pipeline([{ sql: `select ${i} as i, $1::text as s`, params: ["x"] }], {
          end: "commit",
        });
        assertEquals(rows, [[{ i, s: "x" }]]);
      }
      const names = await prepared(pg);
      assertEquals(names.size, 4);
      // The statements of the last pipeline are the most recent: all kept.
      for (const text of ["begin", "commit", "select 5 as i, $1::text as s"]) assert(names.has(text), text);
      assertEquals(await pipeline([select], { end: "commit" }), [[{ n: 2 }]]);
    });

    await t.step("DEALLOCATE ALL in the session: the next pipeline parses again", async () => {
      await pg.exec("deallocate all");
      assertEquals((await prepared(pg)).size, 0);
      assertEquals(await pipeline([select], { end: "commit" }), [[{ n: 2 }]]);
      assert((await prepared(pg)).has(select.sql));
    });

    await t.step(
      "a user's PREPARE under our next name: run again under fresh names, written once",
      async () => {
        const last = Math.max(
          ...[...(await prepared(pg)).values()].map((n) => Number(n.slice(NAME_PREFIX.length))),
        );
        await pg.exec(`prepare ${NAME_PREFIX}${last + 1} as select 'theirs'`);
        const rows = await pipeline([{ sql: "insert into t values ($1) returning n", params: [7] }], {
          end: "commit",
        });
        assertEquals(rows, [[{ n: 7 }]]);
        assertEquals((await pg.query("select n from t")).rows, [{ n: 7 }]);
        const [theirs] = (await pg.query<{ v: string }>(`execute ${NAME_PREFIX}${last + 1}`)).rows;
        assertEquals(Object.values(theirs!), ["theirs"]);
      },
    );

    await t.step("DDL that changes a statement's columns: parsed again, the old one closed", async () => {
      const star = { sql: "select * from t", params: [] };
      assertEquals(await pipeline([star], { end: "commit" }), [[{ n: 7 }]]);
      const before = (await prepared(pg)).get(star.sql);
      await pg.exec("alter table t add column m int default 1");
      assertEquals(await pipeline([star], { end: "commit" }), [[{ n: 7, m: 1 }]]);
      const names = await prepared(pg);
      assert(names.has(star.sql) && names.get(star.sql) !== before, "not parsed again");
      assert(![...names.values()].includes(before!), "the old statement was not closed");
      await pg.exec("alter table t drop column m");
    });
    await t.step(
      "a missing statement of the user's own is an error, run once, and nothing stays",
      async () => {
        await pg.exec("create sequence runs");
        const err = await pipeline([
          { sql: "insert into t select nextval('runs')", params: [] },
          { sql: "execute missing_statement", params: [] },
        ], { end: "commit" }).then(() => undefined, (e) => e as { code?: string });
        assertEquals(err?.code, "26000");
        assertEquals((await pg.query("select n from t order by n")).rows, [{ n: 7 }]);
        // A sequence does not roll back: it counts the runs.
        assertEquals((await pg.query("select last_value from runs")).rows, [{ last_value: 1 }]);
      },
    );
  } finally {
    await pg.close();
  }
});
