import { assertEquals } from "../../tests/assert.ts";
import { parseField, parseFilter, parseLogic, parseOrder, parseQuery } from "./parse.ts";
import { RestError } from "../../lib/rest_errors.ts";
import type { Condition } from "./ast.ts";

/** The error of `fn` as PostgREST writes it: [code, message, details]. */
function failure(fn: () => unknown): [string, string, unknown] | "none" {
  try {
    fn();
  } catch (err) {
    if (err instanceof RestError) return [err.code, err.message, err.details];
    throw err;
  }
  return "none";
}

const filter = (raw: string) => parseFilter(parseField("c"), raw);

// Messages and details copied from PostgREST's own examples (QueryParams.hs doctests, v12–v14).
Deno.test("grammar: PostgREST's messages, positions and details", () => {
  const cases: [() => unknown, string, string][] = [
    [
      () => filter("noop.0"),
      '"failed to parse filter (noop.0)" (line 1, column 1)',
      'unexpected "o" expecting "not" or operator (eq, gt, ...)',
    ],
    [
      () => filter("val"),
      '"failed to parse filter (val)" (line 1, column 1)',
      'unexpected "v" expecting "not" or operator (eq, gt, ...)',
    ],
    [
      () => filter("fts().value"),
      '"failed to parse filter (fts().value)" (line 1, column 5)',
      'unexpected ")" expecting operator (eq, gt, ...)',
    ],
    [
      () => filter("eq().value"),
      '"failed to parse filter (eq().value)" (line 1, column 4)',
      'unexpected ")" expecting operator (eq, gt, ...)',
    ],
    [
      () => filter("is().value"),
      '"failed to parse filter (is().value)" (line 1, column 3)',
      'unexpected "(" expecting operator (eq, gt, ...)',
    ],
    [
      () => filter("in().value"),
      '"failed to parse filter (in().value)" (line 1, column 3)',
      'unexpected "(" expecting operator (eq, gt, ...)',
    ],
    [
      () => filter("is.maybe"),
      '"failed to parse filter (is.maybe)" (line 1, column 4)',
      'unexpected "m" expecting isVal: (null, not_null, true, false, unknown)',
    ],
    [
      () => parseOrder("clients(name,id)"),
      '"failed to parse order (clients(name,id))" (line 1, column 8)',
      'unexpected \'(\' expecting letter, digit, "-", "->>", "->", delimiter (.), "," or end of input',
    ],
    [
      () => parseOrder("id.ac"),
      '"failed to parse order (id.ac)" (line 1, column 4)',
      'unexpected "c" expecting "asc", "desc", "nullsfirst" or "nullslast"',
    ],
    [
      () => parseOrder("id.descc"),
      '"failed to parse order (id.descc)" (line 1, column 8)',
      "unexpected 'c' expecting delimiter (.), \",\" or end of input",
    ],
    [
      () => parseOrder("id.asc.nlsfst"),
      '"failed to parse order (id.asc.nlsfst)" (line 1, column 8)',
      'unexpected "l" expecting "nullsfirst" or "nullslast"',
    ],
    [
      () => parseOrder("id.asc.nullslasttt"),
      '"failed to parse order (id.asc.nullslasttt)" (line 1, column 17)',
      "unexpected 't' expecting \",\" or end of input",
    ],
    [
      () => parseLogic("or", false, "()"),
      '"failed to parse logic tree (())" (line 1, column 4)',
      'unexpected ")" expecting field name (* or [a..z0..9_$]), negation operator (not) or logic operator (and, or)',
    ],
    [
      () => parseLogic("or", false, "(id.in.1,2,id.eq.3)"),
      '"failed to parse logic tree ((id.in.1,2,id.eq.3))" (line 1, column 10)',
      'unexpected "1" expecting "("',
    ],
    [
      () => parseLogic("and", false, "(ord(id.eq.1,id.eq.1),id.eq.2)"),
      '"failed to parse logic tree ((ord(id.eq.1,id.eq.1),id.eq.2))" (line 1, column 7)',
      'unexpected "d" expecting "("',
    ],
    [
      () => parseLogic("or", false, "(id.eq.1,not.xor(id.eq.2,id.eq.3))"),
      '"failed to parse logic tree ((id.eq.1,not.xor(id.eq.2,id.eq.3)))" (line 1, column 16)',
      'unexpected "x" expecting logic operator (and, or)',
    ],
    [
      () => parseField("data->>-78xy"),
      '"failed to parse tree path (data->>-78xy)" (line 1, column 11)',
      'unexpected \'x\' expecting digit, "->", "::", ".", "," or end of input',
    ],
    [
      () => parseField("data->>--34"),
      '"failed to parse tree path (data->>--34)" (line 1, column 9)',
      'unexpected "-" expecting digit',
    ],
  ];
  for (const [fn, message, details] of cases) assertEquals(failure(fn), ["PGRST100", message, details]);
});

Deno.test("grammar: operators, negation, quantifiers and languages", () => {
  const ops = ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "match", "imatch", "isdistinct"];
  for (const op of [...ops, "cs", "cd", "ov", "sl", "sr", "nxr", "nxl", "adj"]) {
    assertEquals([filter(`not.${op}.x`).op, filter(`not.${op}.x`).negate], [op, true]);
  }
  for (const op of ["eq", "gt", "gte", "lt", "lte", "like", "ilike", "match", "imatch"]) {
    for (const q of ["any", "all"] as const) {
      const f = filter(`not.${op}(${q}).{a,b}`);
      assertEquals([f.op, f.quantifier, f.value, f.negate], [op, q, "{a,b}", true]);
    }
  }
  // neq, isdistinct and the range operators take no quantifier, as in PostgREST.
  for (const op of ["neq", "cs", "ov", "isdistinct"]) {
    assertEquals(failure(() => filter(`${op}(any).{a}`))[0], "PGRST100");
  }
  for (const op of ["fts", "plfts", "phfts", "wfts"]) {
    const f = filter(`not.${op}(english).fat cats`);
    assertEquals([f.op, f.language, f.value, f.negate], [op, "english", "fat cats", true]);
    assertEquals(filter(`${op}.cat`).language, undefined);
  }
  for (const v of ["null", "NULL", "not_null", "true", "False", "unknown"]) {
    assertEquals(filter(`not.is.${v}`).value, v.toLowerCase());
  }
  assertEquals(filter("not.in.()").value, []);
  assertEquals(filter('in.("a,b",c,"x\\"y",")")').value, ["a,b", "c", 'x"y', ")"]);
  // What follows a complete expression is ignored, as PostgREST's parser stops there.
  assertEquals(filter("in.(1,2)xyz").value, ["1", "2"]);
  assertEquals(filter("is.nullish").value, "null");
});

Deno.test("grammar: logic trees take blanks, quotes and arrays", () => {
  const values = (c: Condition): unknown => c.kind === "filter" ? c.value : c.children.map(values);
  const tree = parseLogic(
    "or",
    false,
    '( name.eq."a,b",name.eq."x.y(z)", and( a.in.("a,b",c), b.cs.{1,2}) )',
  );
  assertEquals(values(tree), ["a,b", "x.y(z)", [["a,b", "c"], "{1,2}"]]);
  const negated = parseLogic("and", true, '(not.or(a.not.is.null,b.not.like(any).{x*}),c.eq."q\\"d")');
  assertEquals([negated.negate, values(negated)], [true, [["null", "{x*}"], 'q"d']]);
  // An unquoted value keeps its blanks (up to `,` or `)`).
  assertEquals(values(parseLogic("or", false, "(a.eq.x y ,b.eq.1)")), ["x y ", "1"]);
  // A blank after an array value is not allowed (nor in PostgREST): only `,` or `)` may follow it.
  assertEquals(failure(() => parseLogic("or", false, "(b.cs.{1,2} )")), [
    "PGRST100",
    '"failed to parse logic tree ((b.cs.{1,2} ))" (line 1, column 15)',
    'unexpected ")" expecting ","',
  ]);
  // A blank after a quoted value ends the quoting: the value is read unquoted, up to the comma.
  assertEquals(values(parseLogic("or", false, '(a.eq."x" ,b.eq.1)')), ['"x" ', "1"]);
  // Without parentheses the operator and the value are one text, as in PostgREST: a filter on `ora`.
  assertEquals(parseLogic("or", false, "a.eq.1"), {
    kind: "filter",
    field: { name: "ora", path: [] },
    negate: false,
    op: "eq",
    value: "1",
  });
});

Deno.test("grammar: JSON paths, indexes and quoted names", () => {
  assertEquals(parseField("data->a->>b"), {
    name: "data",
    path: [{ op: "->", key: "a", index: false }, { op: "->>", key: "b", index: false }],
  });
  assertEquals(parseField("arr->0->>-1").path, [
    { op: "->", key: "0", index: true },
    { op: "->>", key: "-1", index: true },
  ]);
  assertEquals(parseField('data->"0"').path, [{ op: "->", key: "0", index: false }]);
  assertEquals(parseField('"a.b c"').name, "a.b c");
  assertEquals(parseField(" my col ").name, "my col");
  assertEquals(parseOrder("author(name).desc.nullsfirst,data->>x.asc"), [
    { embed: "author", field: { name: "name", path: [] }, direction: "desc", nulls: "first" },
    { field: { name: "data", path: [{ op: "->>", key: "x", index: false }] }, direction: "asc" },
  ]);
  assertEquals(parseOrder(" a , b.desc").length, 2);
});

Deno.test("grammar: query keys, embedded order/limit/offset and PostgREST's reading of limits", () => {
  const q = parseQuery(
    new URLSearchParams(
      "select=*,authors(*)&authors.order=name.desc&authors.limit=2&authors.offset=1&order=author(name)&" +
        "authors.not.or=(id.eq.1)&data->a.b=eq.1&limit=abc&offset= 3 ",
    ),
  );
  const authors = q.nodes.get("authors")!;
  assertEquals([authors.limit, authors.offset, authors.order[0]!.direction], [2, 1, "desc"]);
  assertEquals((authors.conditions[0] as { negate: boolean }).negate, true);
  assertEquals([q.nodes.get("")!.limit, q.nodes.get("")!.offset], [undefined, 3]);
  assertEquals(q.nodes.get("")!.order[0]!.embed, "author");
  // The first `order` of a resource is the one applied.
  assertEquals(
    parseQuery(new URLSearchParams("order=a&order=b")).nodes.get("")!.order.map((o) => o.field.name),
    ["a"],
  );
  assertEquals(failure(() => parseQuery(new URLSearchParams("limit=-1"))), [
    "PGRST103",
    "Requested range not satisfiable",
    "Limit should be greater than or equal to zero.",
  ]);
  assertEquals(parseQuery(new URLSearchParams('columns=a, b&on_conflict="c d"')).columns, ["a", "b"]);
  assertEquals(failure(() => parseQuery(new URLSearchParams("columns=,a"))), [
    "PGRST100",
    '"failed to parse columns parameter (,a)" (line 1, column 1)',
    'unexpected "," expecting field name (* or [a..z0..9_$])',
  ]);
  // Order errors are reported before filter errors, as PostgREST reads the parameters.
  assertEquals(
    (failure(() => parseQuery(new URLSearchParams("id=nope.1&order=id.up"))) as string[])[1],
    '"failed to parse order (id.up)" (line 1, column 4)',
  );
});

/** A small deterministic generator, so a failing string can be reproduced from its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ALPHABET = [
  ...'abcnotinisqlyfsd.,()"\\{}-> :*!0123456789\t\n',
  "not.",
  "eq.",
  "in.(",
  "or(",
  "and(",
  "->>",
  "(any)",
  "é",
];

export function randomText(next: () => number, max = 24): string {
  let s = "";
  const n = Math.floor(next() * max);
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(next() * ALPHABET.length)];
  return s;
}

Deno.test("grammar: random strings are parsed or refused with a 4xx RestError, nothing else", () => {
  const next = random(20261126);
  for (let i = 0; i < 3000; i++) {
    const text = randomText(next);
    for (
      const fn of [
        () => filter(text),
        () => parseLogic(next() < 0.5 ? "or" : "and", next() < 0.5, text),
        () => parseLogic("or", false, `(${text})`),
        () => parseOrder(text),
        () => parseField(text),
        () => parseQuery(new URLSearchParams(text)),
        () => parseQuery(new URLSearchParams({ [text]: randomText(next) })),
      ]
    ) {
      try {
        fn();
      } catch (err) {
        if (!(err instanceof RestError) || err.status < 400 || err.status > 499) {
          throw new Error(`seed text ${JSON.stringify(text)}: ${err}`);
        }
      }
    }
  }
  // Deep nesting is refused, not a stack overflow.
  assertEquals(
    failure(() => parseLogic("or", false, "(or(".repeat(5000) + "a.eq.1" + "))".repeat(5000)))[0],
    "PGRST100",
  );
});
