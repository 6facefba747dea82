import { assert, assertEquals } from "../../tests/assert.ts";
import { type Parser, run } from "./parsec.ts";
import {
  columns,
  logicPath,
  logicTree,
  logicValue,
  opExpr,
  order,
  singleValue,
  treePath,
} from "./grammar.ts";
import {
  fastColumns,
  fastLogicPath,
  fastLogicTree,
  fastOpExpr,
  fastOrder,
  fastTreePath,
} from "./fast_grammar.ts";
import { parseField, parseFilter, parseLogic, parseOrder, parseQuery } from "./parse.ts";
import { RestError } from "../../lib/rest_errors.ts";

/** A small deterministic generator, so a failing string can be reproduced from its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

type Next = () => number;
const pick = <T>(next: Next, xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
const times = (next: Next, min: number, max: number, f: () => string) =>
  Array.from({ length: min + Math.floor(next() * (max - min + 1)) }, f);

// Valid shapes the fast path reads (and a few it leaves to the grammar: non-ASCII, quotes inside keys).
const NAMES = [
  "id",
  "a",
  "name",
  "col_1",
  "$x",
  "a-b",
  "Ab9",
  "x-y-z",
  '"a b"',
  '"x\\"y"',
  '""',
  "not",
  "and",
  "or",
];
const KEYS = ["a", "0", "-1", "12", "k-v", "x1", "+1", "01", "é", '"q"', "a b", "1-2", "$"];
const VALUES = [
  "1",
  "",
  "abc",
  "x y",
  "*x*",
  "-1.5",
  "a.b",
  "é",
  "{1,2}",
  '"a,b"',
  '"q\\"d"',
  "(x",
  "{a",
  '"open',
];
const IS = ["null", "NULL", "Not_Null", "true", "FALSE", "unknown", "nUlL"];
const OPS = [
  "eq",
  "neq",
  "gt",
  "gte",
  "lt",
  "lte",
  "like",
  "ilike",
  "match",
  "imatch",
  "isdistinct",
  "cs",
  "cd",
  "ov",
  "sl",
  "sr",
  "nxr",
  "nxl",
  "adj",
];

const jsonPathText = (next: Next) =>
  times(next, 0, 2, () => pick(next, ["->", "->>"]) + pick(next, KEYS)).join("");
const fieldText = (next: Next) => pick(next, NAMES) + jsonPathText(next);
const treePathText = (next: Next) =>
  [...times(next, 0, 2, () => pick(next, NAMES)), fieldText(next)].join(".");

function opExprText(next: Next): string {
  const not = next() < 0.2 ? "not." : "";
  const r = next();
  if (r < 0.15) return `${not}in.(${times(next, 1, 3, () => pick(next, VALUES)).join(",")})`;
  if (r < 0.3) return `${not}is.${pick(next, IS)}`;
  if (r < 0.4) {
    return `${not}${pick(next, ["fts", "plfts", "phfts", "wfts"])}${
      pick(next, ["", "(english)", "(simple)"])
    }.x`;
  }
  const op = pick(next, OPS);
  const quant = ["eq", "gt", "like"].includes(op) && next() < 0.3 ? pick(next, ["(any)", "(all)"]) : "";
  return `${not}${op}${quant}.${pick(next, VALUES)}`;
}

function logicText(next: Next, depth: number): string {
  const children = times(
    next,
    1,
    3,
    () =>
      depth < 3 && next() < 0.3
        ? `${next() < 0.3 ? "not." : ""}${pick(next, ["and", "or"])}${logicText(next, depth + 1)}`
        : `${fieldText(next)}.${opExprText(next)}`,
  );
  return `(${children.join(pick(next, [",", ",", ", "]))})`;
}

function orderText(next: Next): string {
  return times(next, 1, 3, () => {
    const base = next() < 0.3 ? `${pick(next, NAMES)}(${fieldText(next)})` : fieldText(next);
    return base + pick(next, ["", ".asc", ".desc"]) + pick(next, ["", ".nullsfirst", ".nullslast"]);
  }).join(",");
}

const columnsText = (next: Next) => times(next, 1, 3, () => pick(next, NAMES)).join(pick(next, [",", ", "]));
const logicPathText = (next: Next) =>
  [...times(next, 0, 2, () => pick(next, ["a", "b", "not"])), pick(next, ["and", "or"])].join(".");

const ALPHABET = [
  ...'abcnotinisqlyfsd.,()"\\{}-> :*!0123456789\t\nAEN_$',
  "not.",
  "eq.",
  "in.(",
  "or(",
  "and(",
  "->>",
  "(any)",
  "é",
  // Beyond grammar_test's noise: order's and is's words, and characters trim or case folding could misread.
  ...[
    ".asc",
    ".desc",
    ".nullsfirst",
    ".nullslast",
    "::",
    "(all)",
    "is.",
    "NULL",
    "not_null",
    "fts(",
    "-1",
    "->0",
  ],
  ...["\u00a0", "\u212a", "\ud83d\ude00", '\\"', "\r", "\v"],
];

/** A valid text changed at one place: an inserted, deleted or replaced character. */
function mutate(next: Next, text: string): string {
  const at = Math.floor(next() * (text.length + 1));
  const r = next();
  const c = pick(next, ALPHABET);
  if (r < 0.4) return text.slice(0, at) + c + text.slice(at);
  if (r < 0.7) return text.slice(0, at) + text.slice(at + 1);
  return text.slice(0, at) + c + text.slice(at + 1);
}

const randomText = (next: Next) => times(next, 0, 20, () => pick(next, ALPHABET)).join("");

interface Rule {
  name: string;
  grammar: (text: string) => ReturnType<typeof run>;
  fast: (text: string) => unknown;
  valid: (next: Next) => string;
}

const grammarOf = (p: Parser<unknown>) => (text: string) => run(p, text);
const TOP = opExpr(singleValue);
const LOGIC = opExpr(logicValue);

const RULES: Rule[] = [
  { name: "treePath", grammar: grammarOf(treePath), fast: fastTreePath, valid: treePathText },
  { name: "logicPath", grammar: grammarOf(logicPath), fast: fastLogicPath, valid: logicPathText },
  { name: "columns", grammar: grammarOf(columns), fast: fastColumns, valid: columnsText },
  { name: "filter", grammar: grammarOf(TOP), fast: (t) => fastOpExpr(t, true), valid: opExprText },
  { name: "logic filter", grammar: grammarOf(LOGIC), fast: (t) => fastOpExpr(t, false), valid: opExprText },
  { name: "order", grammar: grammarOf(order), fast: fastOrder, valid: orderText },
  {
    name: "logic tree",
    // The grammar reads `or(…)` as one text; the fast path is given the operator and the text from `(`.
    grammar: (t) => run(logicTree, `not.or${t}`),
    fast: (t) => fastLogicTree("or", true, t),
    valid: (next) => logicText(next, 0),
  },
];

/** Whenever the fast path reads a text, the grammar reads it too, to the same value (same keys, same order). */
function compare(rule: Rule, text: string): boolean {
  const fast = rule.fast(text);
  if (fast === undefined) return false;
  const slow = rule.grammar(text);
  assert(slow.ok, `${rule.name}: the fast path read ${JSON.stringify(text)}, which the grammar refuses`);
  assertEquals(JSON.stringify(fast), JSON.stringify(slow.value), `${rule.name}: ${JSON.stringify(text)}`);
  return true;
}

Deno.test("fast grammar: the same values as the grammar on generated valid texts, their mutations and noise", () => {
  const next = random(20261126);
  for (const rule of RULES) {
    let read = 0;
    const total = 3000;
    for (let i = 0; i < total; i++) {
      const text = rule.valid(next);
      if (compare(rule, text)) read++;
      compare(rule, mutate(next, text));
      compare(rule, randomText(next));
    }
    // Most valid texts take the fast path (the rest have shapes left to the grammar on purpose).
    assert(read > total / 3, `${rule.name}: the fast path read only ${read} of ${total} valid texts`);
  }
});

Deno.test("fast grammar: the usual shapes are read by the fast path", () => {
  const cases: [(t: string) => unknown, string][] = [
    [fastTreePath, "id"],
    [fastTreePath, "authors.books.data->a->>0"],
    [fastTreePath, '"a b"->x'],
    [(t) => fastOpExpr(t, true), "eq.1"],
    [(t) => fastOpExpr(t, true), 'not.in.(a,b,"c,d")'],
    [(t) => fastOpExpr(t, true), "is.null"],
    [(t) => fastOpExpr(t, true), "fts(english).cat & dog"],
    [(t) => fastOpExpr(t, true), "like(any).{a*,b*}"],
    [(t) => fastLogicTree("or", false, t), "(a.eq.1,b.gt.2,and(c.is.null,d.like.*x*))"],
    [(t) => fastLogicTree("and", true, t), '( a.eq."x,y", not.or(b.in.(1,2),c.cs.{1,2}))'],
    [fastOrder, "a.desc.nullslast,author(name).asc,data->>x"],
    [fastColumns, "a, b,c"],
    [fastLogicPath, "authors.not.or"],
  ];
  for (const [fast, text] of cases) assert(fast(text) !== undefined, text);
});

/** The outcome of `fn`: its value, or the code, message and details of its error. */
function outcome(fn: () => unknown): unknown {
  try {
    return { value: fn() };
  } catch (err) {
    if (err instanceof RestError) return { error: [err.code, err.message, err.details] };
    throw err;
  }
}

Deno.test("fast grammar: where the fast path stops, the parser answers as the grammar alone (value or error)", () => {
  const next = random(7);
  const cases: [string, () => unknown, () => ReturnType<typeof run>][] = [];
  for (let i = 0; i < 1500; i++) {
    const f = mutate(next, opExprText(next));
    const l = mutate(next, logicText(next, 0));
    const o = mutate(next, orderText(next));
    const k = mutate(next, treePathText(next));
    cases.push(
      [f, () => parseFilter({ name: "c", path: [] }, f), () => run(TOP, f)],
      [l, () => parseLogic("or", false, l), () => run(logicTree, `or${l}`)],
      [o, () => parseOrder(o), () => run(order, o)],
      [k, () => parseField(k), () => run(treePath, k)],
    );
  }
  let errors = 0;
  for (const [text, parsed, grammar] of cases) {
    const g = grammar();
    const p = outcome(parsed) as { value?: unknown; error?: [string, string, string] };
    if (g.ok) {
      assert(p.value !== undefined, `${JSON.stringify(text)}: ${JSON.stringify(p.error)}`);
      continue;
    }
    errors++;
    // The grammar's error, word for word, position included.
    assert(p.error !== undefined, `${JSON.stringify(text)} parsed, but the grammar refuses it`);
    assertEquals(p.error[2], g.details, JSON.stringify(text));
    assert(
      p.error[1].endsWith(`(line ${g.line}, column ${g.column})`),
      `${JSON.stringify(text)}: ${p.error[1]}`,
    );
  }
  assert(errors > 100, `only ${errors} mutations were errors`);
});

Deno.test("fast grammar: a whole query string reads the same as through the grammar", () => {
  const q = parseQuery(
    new URLSearchParams(
      'select=*&id=eq.1&or=(a.eq.1,b.gt.2,and(c.is.null,d.like.*x*))&order=a.desc.nullslast&name=in.(a,b,"c,d")' +
        "&authors.not.and=(x.is.true)&data->a->>0=gte.10&columns=a,b",
    ),
  );
  const root = q.nodes.get("")!;
  assertEquals(root.order, [{ field: { name: "a", path: [] }, direction: "desc", nulls: "last" }]);
  assertEquals(root.conditions.length, 4);
  assertEquals(root.conditions[3], {
    kind: "filter",
    field: {
      name: "data",
      path: [{ op: "->", key: "a", index: false }, { op: "->>", key: "0", index: true }],
    },
    negate: false,
    op: "gte",
    value: "10",
  });
  assertEquals(q.nodes.get("authors")!.conditions[0]!.kind, "logic");
  assertEquals(q.columns, ["a", "b"]);
});
