import { assert, assertEquals } from "../../tests/assert.ts";
import { RestError } from "../../lib/rest_errors.ts";
import { MAX_DEPTH, MAX_SELECT_ITEMS, parseSelect } from "./parse.ts";
import { readSelect } from "./select_grammar.ts";
import { fastSelect } from "./fast_select.ts";

/**
 * Select strings (PostgREST's spec and doctests, this repository's tests, and mutations of them: truncations,
 * inserted `,()!:.*"->`, blanks, non-ASCII) with the answer recorded from PostgREST v14.17's parser: the items,
 * or the message and details of the PGRST100 error.
 */
type Row =
  & { select: string }
  & ({ ok: true; tree: unknown[] } | { ok: false; message: string; details: string });

const rows: Row[] = JSON.parse(
  await Deno.readTextFile(new URL("../../tests/fixtures/select_grammar.json", import.meta.url)),
);

/** The items as JSON has them (an unset optional field and a missing one are the same). */
const plain = (x: unknown) => JSON.parse(JSON.stringify(x));

type Answer = { ok: true; tree: unknown } | { ok: false; message: string; details: unknown };

function answer(select: string): Answer {
  try {
    return { ok: true, tree: plain(parseSelect(select)) };
  } catch (err) {
    if (!(err instanceof RestError) || err.code !== "PGRST100") throw err;
    return { ok: false, message: err.message, details: err.details };
  }
}

const expected = (row: Row): Answer =>
  row.ok ? { ok: true, tree: row.tree } : { ok: false, message: row.message, details: row.details };

/**
 * Where PostgREST writes a cast's text into the SQL as is, the platform answers PGRST100: a type name is a word
 * not starting with a digit or `$` (`$$` would open a dollar-quoted string), or a known phrase.
 */
const REFUSED_CASTS = new Map([
  ['"x\\"y":_,"a b"::text,_:x-y-z::1x', '"1x" is not a type name'],
  ['*,""->>01.count(),left::$$,"a b"->>"q"->!,id', '"$$" is not a type name'],
  ["*,id::1x::1x,Ab9::text", '"1x" is not a type name'],
  ['9:"a b"->01->>+1,a::1x,"*"->*,*,Ab9->"q"::_t', '"1x" is not a type name'],
  ['Ab9->>"q"::$$', '"$$" is not a type name'],
  ["Ab9::$$", '"$$" is not a type name'],
  ['Ab9::_t,""::1x,"*":""->a_b::$$', '"1x" is not a type name'],
  ['a - b->>* , "a b":count()::1x , left::int4', '"1x" is not a type name'],
  ['a::1x,""->>x1->01,id', '"1x" is not a type name'],
  ['col_1->>12.max(),"*",left:sum::1x', '"1x" is not a type name'],
  ["col_1->a::1x", '"1x" is not a type name'],
  ['count:x-y-z::$$, a-b:"a b"', '"$$" is not a type name'],
  ["first name,日本::1x,name,name::int,_->>a->x1", '"1x" is not a type name'],
  ["i::1x", '"1x" is not a type name'],
  ["id::$$", '"$$" is not a type name'],
  ["id::1x", '"1x" is not a type name'],
  ["id:left::$$", '"$$" is not a type name'],
  ["inner:col_1::$$", '"$$" is not a type name'],
  ["name,a  b-c d::$$::a b ", '"$$" is not a type name'],
  ["naïve->x1->>!, ª: ª::numeri c", '"numeri c" is not a type name'],
  ["naïve:: int.avg(),$x::a b ", '"a b" is not a type name'],
  ['sum:"*",count->>"q"->a_b::1x', '"1x" is not a type name'],
  ["été-x::a b ", '"a b" is not a type name'],
  ["𝒳!a-b!fk(left:name.avg()), $x, id::$$ .sum()", '"$$" is not a type name'],
  ["𝒳->+1->+1,naïve:日本->-1->>01::$$", '"$$" is not a type name'],
]);

Deno.test("select grammar: every recorded select parses to PostgREST's items or fails with its error", () => {
  assert(rows.length > 1000);
  const limits = { maxDepth: MAX_DEPTH, maxItems: MAX_SELECT_ITEMS };
  for (const row of rows) {
    const r = readSelect(row.select, limits);
    const grammar: Answer = r.ok ? { ok: true, tree: plain(r.value) } : {
      ok: false,
      message: `"failed to parse select parameter (${row.select})" (line ${r.line}, column ${r.column})`,
      details: r.details,
    };
    assertEquals(grammar, expected(row), JSON.stringify(row.select));
  }
});

Deno.test("select grammar: the fast path reads only what the grammar accepts, to the same items", () => {
  let read = 0;
  for (const row of rows) {
    const fast = fastSelect(row.select, MAX_SELECT_ITEMS, MAX_DEPTH);
    if (fast === undefined) continue;
    read++;
    assertEquals({ ok: true, tree: plain(fast) }, expected(row), JSON.stringify(row.select));
  }
  assert(read > rows.length / 3, `the fast path read ${read} of ${rows.length}`);
});

Deno.test("select grammar: parseSelect answers as PostgREST, but for the casts it refuses", () => {
  for (const row of rows) {
    const refused = REFUSED_CASTS.get(row.select);
    const want: Answer = refused === undefined
      ? expected(row)
      : { ok: false, message: `failed to parse select parameter (${row.select})`, details: refused };
    assertEquals(answer(row.select), want, JSON.stringify(row.select));
  }
  for (const select of REFUSED_CASTS.keys()) assert(rows.some((r) => r.select === select && r.ok), select);
});

Deno.test("select grammar: casts are type names, one word or a known phrase", () => {
  const cast = (select: string) => {
    const a = answer(select);
    return a.ok ? (a.tree as { cast?: string }[])[0]!.cast : a.details;
  };
  assertEquals(cast("id::int4"), "int4");
  assertEquals(cast("id::double precision"), "double precision");
  assertEquals(cast("id::Timestamp  With Time Zone"), "Timestamp  With Time Zone");
  assertEquals(cast("id::naïve"), "naïve");
  assertEquals(cast("id::text union select"), '"text union select" is not a type name');
  assertEquals(cast("id:: "), '"" is not a type name');
  assertEquals(cast("id::$1"), '"$1" is not a type name');
  // An array type is not a name PostgREST's grammar reads.
  assertEquals(
    cast("id::text[]"),
    'unexpected \'[\' expecting letter, digit, ".", "::", ")", "," or end of input',
  );
});

Deno.test("select grammar: the platform's limits hold on the fast path and in the grammar alike", () => {
  const details = (select: string) => {
    const a = answer(select);
    return a.ok ? "ok" : a.details;
  };
  // A JSON key beyond ASCII, or a tab before `,`, is left to the grammar.
  for (const column of ["x", "x->é"]) {
    const nested = (n: number) => "a(".repeat(n) + column + ")".repeat(n);
    assertEquals(details(nested(MAX_DEPTH)), "ok");
    assertEquals(details(nested(MAX_DEPTH + 1)), "embedded resources are nested too deeply");
  }
  for (const comma of [",", "\t,"]) {
    const columns = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`).join(comma);
    assertEquals(details(columns(MAX_SELECT_ITEMS)), "ok");
    assertEquals(details(columns(MAX_SELECT_ITEMS + 1)), `more than ${MAX_SELECT_ITEMS} columns and embeds`);
  }
});
