import { assertEquals } from "../../tests/assert.ts";
import {
  MAX_SELECT_ITEMS,
  parseField,
  parseFilter,
  parseList,
  parseLogic,
  parseOrder,
  parseQuery,
  parseSelect,
} from "./parse.ts";
import { RestError } from "../../lib/rest_errors.ts";
import type { Logic } from "./ast.ts";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof RestError) return err.code;
    throw err;
  }
  return "none";
}

Deno.test("parse: select items", () => {
  assertEquals(parseSelect("*"), [{ kind: "star" }]);
  assertEquals(parseSelect("id, n:name, data->a->>b, price::text"), [
    { kind: "column", field: { name: "id", path: [] }, alias: undefined, cast: undefined },
    { kind: "column", field: { name: "name", path: [] }, alias: "n", cast: undefined },
    {
      kind: "column",
      field: {
        name: "data",
        path: [{ op: "->", key: "a", index: false }, { op: "->>", key: "b", index: false }],
      },
      alias: undefined,
      cast: undefined,
    },
    { kind: "column", field: { name: "price", path: [] }, alias: undefined, cast: "text" },
  ]);
  assertEquals(parseSelect("w:authors!fk!inner(name,books(*))"), [{
    kind: "embed",
    name: "authors",
    alias: "w",
    hint: "fk",
    join: "inner",
    spread: false,
    select: [
      { kind: "column", field: { name: "name", path: [] }, alias: undefined, cast: undefined },
      {
        kind: "embed",
        name: "books",
        alias: undefined,
        hint: undefined,
        join: "left",
        spread: false,
        select: [{ kind: "star" }],
      },
    ],
  }]);
  assertEquals(parseSelect('"odd name"')[0], {
    kind: "column",
    field: { name: "odd name", path: [] },
    alias: undefined,
    cast: undefined,
  });
});

Deno.test("parse: filters, lists and logic trees", () => {
  const f = (raw: string) => parseFilter(parseField("c"), raw);
  assertEquals(f("eq.a.b"), {
    kind: "filter",
    field: { name: "c", path: [] },
    negate: false,
    op: "eq",
    value: "a.b",
  });
  assertEquals(f('not.in.(1,"a,b",x"y)').value, ["1", "a,b", 'x"y']);
  assertEquals(f("not.in.(1)").negate, true);
  assertEquals(f("like(any).{a*,b*}").quantifier, "any");
  assertEquals(f("like(any).{a*,b*}").value, "{a*,b*}");
  assertEquals(f("fts(english).cat").language, "english");
  assertEquals(parseList("()"), []);
  assertEquals(parseList('("")'), []);
  // Unquoted elements keep their blanks, as PostgREST's list parser does; blanks around the parentheses go.
  assertEquals(parseList('( "a\\"b", c )'), ['a"b', " c "]);
  const logic = parseLogic("or", false, '(a.eq.1,and(b.gt.2,c.not.is.null),d->>e.eq."x,y")') as Logic;
  assertEquals(logic.children.length, 3);
  assertEquals(logic.children[1]!.kind, "logic");
  assertEquals(logic.children[2], {
    kind: "filter",
    field: { name: "d", path: [{ op: "->>", key: "e", index: false }] },
    negate: false,
    op: "eq",
    value: "x,y",
  });
  assertEquals(parseOrder("a.desc.nullslast,b,c->d.asc"), [
    { field: { name: "a", path: [] }, direction: "desc", nulls: "last" },
    { field: { name: "b", path: [] } },
    { field: { name: "c", path: [{ op: "->", key: "d", index: false }] }, direction: "asc" },
  ]);
});

Deno.test("parse: query string nodes for embedded resources", () => {
  const q = parseQuery(
    new URLSearchParams("select=*,a(b(*))&a.b.x=eq.1&a.order=y&a.limit=2&not.or=(z.eq.1)&a.b.or=(x.eq.2)"),
  );
  assertEquals([...q.nodes.keys()].sort(), ["", "a", "a.b"]);
  assertEquals(q.nodes.get("a")!.limit, 2);
  assertEquals(q.nodes.get("a.b")!.conditions.length, 2);
  assertEquals((q.nodes.get("")!.conditions[0] as { negate: boolean }).negate, true);
});

Deno.test("parse: malformed input is PGRST100", () => {
  const bad = [
    () => parseSelect("a,(b"),
    () => parseSelect("a::int;drop"),
    () => parseSelect("a(b"),
    () => parseFilter(parseField("c"), "nope.1"),
    () => parseFilter(parseField("c"), "eq"),
    () => parseFilter(parseField("c"), "is.maybe"),
    () => parseFilter(parseField("c"), "in.1,2"),
    () => parseFilter(parseField("c"), "eq(some).{1}"),
    () => parseLogic("or", false, "(a.eq.1"),
    () => parseLogic("or", false, "(a)"),
    () => parseOrder("a.up"),
    () => parseQuery(new URLSearchParams("a=eq.\0")),
    () => parseSelect("a(".repeat(40) + ")".repeat(40)),
  ];
  for (const fn of bad) assertEquals(code(fn), "PGRST100");
  // PostgREST reads the longest valid prefix of a select, here none: every column.
  assertEquals(parseSelect("...a"), []);
});

Deno.test("parse: select= names at most MAX_SELECT_ITEMS columns and embeds", () => {
  const columns = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`).join(",");
  assertEquals(parseSelect(columns(MAX_SELECT_ITEMS)).length, MAX_SELECT_ITEMS);
  assertEquals(code(() => parseSelect(columns(MAX_SELECT_ITEMS + 1))), "PGRST100");
  assertEquals(code(() => parseSelect(`a(${columns(MAX_SELECT_ITEMS)})`)), "PGRST100");
});

Deno.test("parse: aggregates in select", () => {
  assertEquals(parseSelect("count()"), [
    { kind: "column", field: { name: "*", path: [] }, alias: undefined, aggregate: "count" },
  ]);
  assertEquals(parseSelect("total:amount::int.sum()::text"), [{
    kind: "column",
    field: { name: "amount", path: [] },
    alias: "total",
    cast: "int",
    aggregate: "sum",
    aggregateCast: "text",
  }]);
  assertEquals(parseSelect("data->a->>b::numeric.avg()")[0], {
    kind: "column",
    field: {
      name: "data",
      path: [{ op: "->", key: "a", index: false }, { op: "->>", key: "b", index: false }],
    },
    alias: undefined,
    cast: "numeric",
    aggregate: "avg",
  });
  assertEquals(parseSelect("n:count()::int, x.max(), orders(amount.min())").length, 3);
  assertEquals(code(() => parseSelect("x.MAX()")), "PGRST100"); // lower case only, as PostgREST
  assertEquals(code(() => parseSelect("count(id)")), "PGRST100");
  assertEquals(code(() => parseSelect("amount.median()")), "PGRST100");
  assertEquals(code(() => parseSelect("amount.sum")), "PGRST100"); // `.sum` must be a call, as in PostgREST
  assertEquals(code(() => parseSelect("amount.sum()::")), "PGRST100");
  assertEquals(code(() => parseSelect("amount.sum()x")), "PGRST100");
});

Deno.test("parse: random select strings fail as 400 or parse", () => {
  const atoms = [
    "a",
    "b:",
    "count()",
    ".sum()",
    "::int",
    "(",
    ")",
    ",",
    "...",
    "!inner",
    "->",
    "->>",
    '"',
    "*",
    ".",
  ];
  let seed = 7;
  for (let i = 0; i < 2000; i++) {
    let s = "";
    for (let j = 0; j < 1 + (i % 12); j++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      s += atoms[seed % atoms.length];
    }
    const result = code(() => parseSelect(s));
    assertEquals(["none", "PGRST100"].includes(result), true, `${s} → ${result}`);
  }
});
