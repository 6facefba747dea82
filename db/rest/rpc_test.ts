import { assertEquals, assertRejects } from "../../tests/assert.ts";
import { Compiler } from "./compile.ts";
import { parseQuery } from "./parse.ts";
import { chooseFunction, queryArguments, splitRpcQuery } from "./rpc.ts";
import type { FunctionInfo, FunctionParam, SchemaCache } from "./schema.ts";

function param(name: string, type = "integer", required = true): FunctionParam {
  return { name, type, udt: type === "integer" ? "int4" : type, required, variadic: false };
}

function scalarFn(name: string, params: FunctionParam[]): FunctionInfo {
  return {
    name,
    params,
    result: { kind: "scalar", set: false, type: "integer", udt: "int4", columns: [], table: null },
    volatility: "v",
  };
}

const EVIL = `a"; drop table t; --`;
const cache: SchemaCache = {
  schema: "public",
  tables: new Map(),
  foreignKeys: [],
  functions: new Map([
    ["add", [scalarFn("add", [param("a"), param("b", "integer", false)])]],
    ["pick", [scalarFn("pick", [param("x")]), scalarFn("pick", [param("x"), param("y")])]],
    [EVIL, [scalarFn(EVIL, [param(EVIL, "text")])]],
  ]),
  loadedAt: Date.now(),
};

Deno.test("rpc: GET keys without an operator are arguments, the rest shapes the result", () => {
  const { args, rest } = splitRpcQuery(
    new URLSearchParams("a=1&b=2&select=x&order=x&limit=1&x=gt.3&y=not.is.null&t=fts(english).cat&e.z=1&b=3"),
  );
  assertEquals([...args], [["a", ["1"]], ["b", ["2", "3"]]]);
  assertEquals([...rest.keys()], ["select", "order", "limit", "x", "y", "t", "e.z"]);
});

Deno.test("rpc: overloads are chosen by argument names", async () => {
  const shape = (keys: string[]) => ({ keys, singleObject: false, post: true });
  assertEquals(chooseFunction(cache, "add", shape(["a"])).params.length, 2);
  assertEquals(chooseFunction(cache, "pick", shape(["x", "y"])).params.length, 2);
  assertEquals(chooseFunction(cache, "pick", shape(["x"])).params.length, 1);
  await assertRejects(
    () => Promise.resolve().then(() => chooseFunction(cache, "add", shape(["b"]))),
    /add\(b\)/,
  );
  await assertRejects(() => Promise.resolve().then(() => chooseFunction(cache, "add", shape(["a", "c"]))));
  await assertRejects(() => Promise.resolve().then(() => chooseFunction(cache, "nope", shape([]))));
});

Deno.test("rpc: names are quoted, argument values are one parameter", () => {
  const fn = cache.functions.get(EVIL)![0]!;
  const value = "'); drop table t; --";
  const args = queryArguments(fn, new Map([[EVIL, [value]]]));
  const st = new Compiler(cache, parseQuery(new URLSearchParams())).call(fn, args, {
    count: false,
    maxRows: 5,
  });
  assertEquals(st.sql.includes(`"public"."a""; drop table t; --"(`), true, st.sql);
  assertEquals(st.sql.includes(value), false, st.sql);
  assertEquals(st.params[0], JSON.stringify({ [EVIL]: value }));
});
