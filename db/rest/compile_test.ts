import { assert, assertEquals } from "../../tests/assert.ts";
import { Compiler } from "./compile.ts";
import { parseQuery } from "./parse.ts";
import type { SchemaCache, TableInfo } from "./schema.ts";

function tableInfo(name: string, columns: string[], primaryKey: string[] = []): TableInfo {
  return {
    name,
    kind: "table",
    columns: new Map(
      columns.map((
        c,
      ) => [c, { name: c, type: "text", udt: "text", nullable: true, hasDefault: false, generated: false }]),
    ),
    primaryKey,
    uniques: primaryKey.length ? [primaryKey] : [],
    insertable: true,
    updatable: true,
    deletable: true,
  };
}

const EVIL = `x"; drop table t; --`;
const EVIL_SELECT = "a; drop table t; --";
const cache: SchemaCache = {
  schema: "public",
  tables: new Map([["t", tableInfo("t", ["id", EVIL, EVIL_SELECT, "data"], ["id"])]]),
  foreignKeys: [],
  functions: new Map(),
  loadedAt: Date.now(),
};

Deno.test("compile: identifiers are quoted, values are parameters", () => {
  const evilValue = "'; drop table t; --";
  const q = new URLSearchParams();
  q.set("select", `id,"${EVIL_SELECT}",data->>k`);
  // A key with a double quote is written quoted, its quote escaped (PostgREST's grammar).
  q.set(`"${EVIL.replaceAll('"', '\\"')}"`, `eq.${evilValue}`);
  q.set("data->>k'", "in.(a,b)");
  q.set("order", "id.desc");
  const st = new Compiler(cache, parseQuery(q)).read("t", { count: true, maxRows: 10 });
  assert(st.sql.includes(`"x""; drop table t; --"`), st.sql);
  assert(st.sql.includes(`"a; drop table t; --"`), st.sql);
  assert(!st.sql.includes(evilValue), "a value reached the SQL text");
  assert(!st.sql.includes("'k'"), "a JSON key reached the SQL text");
  assert(st.params.includes(evilValue));
  assert(st.params.includes("k"));
  assert(st.params.includes("k'"));
  // The page size is the one literal: digits only, so that the planner knows it (see Compiler.rowCount).
  assert(st.sql.includes(" limit 10)"), st.sql);
  assertEquals(st.params.includes(10), false);
});

Deno.test("compile: a page size is written as digits, an offset stays a parameter", () => {
  const q = new URLSearchParams("select=id,data&limit=3&offset=7");
  const st = new Compiler(cache, parseQuery(q)).read("t", { count: false, maxRows: 1000 });
  assert(/ limit 3 offset \$\d+\)/.test(st.sql), st.sql);
  assert(st.params.includes(7));
  const capped = new Compiler(cache, parseQuery(new URLSearchParams("limit=5000"))).read("t", {
    count: false,
    maxRows: 1000,
  });
  assert(capped.sql.includes(" limit 1000)"), capped.sql);
});

Deno.test("compile: writes take the body as one JSON parameter", () => {
  const rows = [{ id: "1", [EVIL]: "'); drop table t; --" }];
  const st = new Compiler(cache, parseQuery(new URLSearchParams())).insert("t", {
    rows,
    missingDefault: false,
    representation: true,
  });
  assertEquals(st.params, [JSON.stringify(rows)]);
  assert(!st.sql.includes("drop table t; --'"), st.sql);
  const upd = new Compiler(cache, parseQuery(new URLSearchParams("id=eq.1"))).update("t", { data: "x" }, {
    representation: false,
  });
  assertEquals([...upd.params].sort(), ["1", JSON.stringify({ data: "x" })]);
});

Deno.test("compile: unknown names are refused before any SQL", () => {
  const codeOf = (fn: () => unknown) => {
    try {
      fn();
      return "none";
    } catch (err) {
      return (err as { code: string }).code;
    }
  };
  const c = (qs: string) => new Compiler(cache, parseQuery(new URLSearchParams(qs)));
  assertEquals(codeOf(() => c("").read("nope", { count: false, maxRows: 1 })), "PGRST205");
  assertEquals(codeOf(() => c("select=nope").read("t", { count: false, maxRows: 1 })), "42703");
  assertEquals(codeOf(() => c("nope=eq.1").read("t", { count: false, maxRows: 1 })), "42703");
  assertEquals(codeOf(() => c("select=id,other(*)").read("t", { count: false, maxRows: 1 })), "PGRST200");
  assertEquals(codeOf(() => c("").delete("t", { representation: false, requireFilter: true })), "21000");
  assertEquals(
    codeOf(() => c("").update("t", { id: 1 }, { representation: false, requireFilter: true })),
    "21000",
  );
  // Without the safe-update option an unfiltered write compiles, as PostgREST runs it.
  assertEquals(codeOf(() => c("").delete("t", { representation: false })), "none");
  assertEquals(codeOf(() => c("id=neq.1").put("t", [{ id: 1 }], { representation: false })), "PGRST105");
  assertEquals(
    codeOf(() => c("").insert("t", { rows: [{ nope: 1 }], missingDefault: false, representation: false })),
    "PGRST204",
  );
});

Deno.test("compile: aggregates group by the other items and are refused when off", () => {
  const q = new URLSearchParams({ select: "id,n:count(),data::int.sum()::text" });
  const compiler = new Compiler(cache, parseQuery(q));
  assertEquals(code(() => compiler.read("t", { count: false, maxRows: 10 })), "PGRST123");
  const on = new Compiler(cache, parseQuery(q));
  on.aggregatesEnabled = true;
  const st = on.read("t", { count: false, maxRows: 10 });
  assert(st.sql.includes(`count(*) as "n"`), st.sql);
  assert(st.sql.includes(`(sum(("_0"."data")::int))::text as "sum"`), st.sql);
  assert(st.sql.includes(" group by 1 "), st.sql);
});

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
  return "none";
}
