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
  ['"*":count.count()::1x,*', '"1x" is not a type name'],
  ['"a b"->!->01::1x, "a b"', '"1x" is not a type name'],
  ['"a b":"*"->!->a_b::$$, 9->01::int, "":x-y-z, x-y-z->-1->"q", *', '"$$" is not a type name'],
  ['*,name:"*"::$$', '"$$" is not a type name'],
  ['..."x\\"y"(left),$x->>a->01::$$', '"$$" is not a type name'],
  ['count->>$->>12::text,*,a:Ab9->>"q"::int4,"a b"->$,9->a::1x.min()', '"1x" is not a type name'],
  ["i::1x", '"1x" is not a type name'],
  ["id::$$", '"$$" is not a type name'],
  ["id::1x", '"1x" is not a type name'],
  ["inner->$->12::1x", '"1x" is not a type name'],
  ["inner->a->>-1::1x, x-y-z->+1->>01, Ab9", '"1x" is not a type name'],
  ["inner::$$,sum::1x,col_1,Ab9,inner->12->0.sum()", '"$$" is not a type name'],
  ['name->>k-v::numeric::$$,Ab9::1x.sum(),"x\\"y":""', '"$$" is not a type name'],
  ["sum->>$,a,count()::1x", '"1x" is not a type name'],
  ['x-y-z:name,name,"":name.count(),count::numeric,col_1::$$', '"$$" is not a type name'],
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
