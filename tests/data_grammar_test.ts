// PostgREST's query-string grammar on /rest/v1, row by row: what it accepts (blanks, quotes, negation on every
// operator, quantifiers, languages, JSON paths, embedded order and paging) and what it refuses, with its wording.
import { assert } from "./assert.ts";
import { LIBRARY_SQL, ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const ids = (...list: number[]) => list.map((id) => ({ id }));
const q = encodeURIComponent;

const CASES: WireCase[] = [
  // Logic trees: blanks around items and after commas, quoted values with commas, dots and parentheses.
  {
    name: "or with blanks",
    url: `books?select=id&or=(${q(" id.eq.1 , id.eq.3")})&order=id`,
    status: 200,
    json: ids(1, 3),
  },
  {
    name: "or with quoted values holding , . ( )",
    url: `books?select=id&or=(${q('title.eq."The Dispossessed",title.eq."a,b.c(d)",title.eq."x\\"y"')})`,
    status: 200,
    json: ids(1),
  },
  {
    name: "nested not.and inside or",
    url: `books?select=id&or=(${q("id.eq.5,not.and(id.gte.2,id.lte.4)")})&order=id`,
    status: 200,
    json: ids(1, 5),
  },
  {
    name: "not.or at the root",
    url: `books?select=id&not.or=(id.lt.3,id.gt.4)&order=id`,
    status: 200,
    json: ids(3, 4),
  },
  {
    name: "in with quoted values",
    url: `books?select=id&title=in.(${q('"Solaris","A Wizard of Earthsea",x')})&order=id`,
    status: 200,
    json: ids(2, 3),
  },
  { name: "not.in", url: "books?select=id&id=not.in.(1,2,3)&order=id", status: 200, json: ids(4, 5) },
  { name: "in.() is the empty list", url: "books?select=id&id=in.()", status: 200, json: [] },
  // is, isdistinct and negation.
  {
    name: "not.is.null",
    url: "books?select=id&rating=not.is.null&order=id",
    status: 200,
    json: ids(1, 2, 3, 5),
  },
  {
    name: "is.not_null",
    url: "books?select=id&rating=is.not_null&order=id",
    status: 200,
    json: ids(1, 2, 3, 5),
  },
  { name: "is.NULL (any case)", url: "books?select=id&rating=is.NULL", status: 200, json: ids(4) },
  { name: "not.is.true", url: "books?select=id&in_print=not.is.true", status: 200, json: ids(5) },
  { name: "is.unknown", url: "books?select=id&in_print=is.unknown", status: 200, json: [] },
  {
    name: "isdistinct",
    url: "books?select=id&rating=isdistinct.5&order=id",
    status: 200,
    json: ids(2, 4, 5),
  },
  {
    name: "not.isdistinct",
    url: "books?select=id&rating=not.isdistinct.5&order=id",
    status: 200,
    json: ids(1, 3),
  },
  // Full-text search with and without a language, negated.
  {
    name: "fts on a text column with a language",
    url: "books?select=id&title=fts(english).wizard",
    status: 200,
    json: ids(2),
  },
  {
    name: "not.fts(english) on a tsvector",
    url: "books?select=id&search=not.fts(english).wizard&order=id",
    status: 200,
    json: ids(1, 3, 4, 5),
  },
  { name: "plfts", url: "books?select=id&search=plfts.cyberiad", status: 200, json: ids(4) },
  {
    name: "phfts(english)",
    url: `books?select=id&search=phfts(english).${q("wizard of earthsea")}`,
    status: 200,
    json: ids(2),
  },
  { name: "wfts", url: `books?select=id&search=wfts.${q("ocean or solaris")}`, status: 200, json: ids(3) },
  // any/all modifiers; * is % in like/ilike.
  {
    name: "like(any)",
    url: `books?select=id&title=like(any).${q("{*Sol*,*Cyber*}")}&order=id`,
    status: 200,
    json: ids(3, 4),
  },
  {
    name: "not.ilike(all)",
    url: `books?select=id&title=not.ilike(all).${q("{*THE*,*d}")}&order=id`,
    status: 200,
    json: ids(2, 3, 5),
  },
  { name: "gt(any)", url: `books?select=id&id=gt(any).${q("{3,4}")}&order=id`, status: 200, json: ids(4, 5) },
  {
    name: "not.eq(all)",
    url: `books?select=id&id=not.eq(all).${q("{1}")}&order=id`,
    status: 200,
    json: ids(2, 3, 4, 5),
  },
  { name: "ilike with *", url: "books?select=id&title=ilike.*WIZARD*", status: 200, json: ids(2) },
  {
    name: "not.cs on an array",
    url: `books?select=id&tags=not.cs.${q("{scifi}")}&order=id`,
    status: 200,
    json: ids(2, 5),
  },
  {
    name: "ov on an array",
    url: `books?select=id&tags=ov.${q("{humor,fantasy}")}&order=id`,
    status: 200,
    json: ids(2, 4),
  },
  {
    name: "not.sl on a range",
    url: `books?select=id&pages=not.sl.${q("[300,400)")}&order=id`,
    status: 200,
    json: ids(1),
  },
  // JSON paths in select, filters and order; array indexes, negative ones; a cast on a filter key is ignored.
  {
    name: "JSON path in a filter and in select with a cast",
    url: "authors?select=id,hugo:meta->awards->>hugo::int&meta->awards->>hugo=eq.5",
    status: 200,
    json: [{ id: 1, hugo: 5 }],
  },
  { name: "array index", url: "authors?select=id&meta->langs->>0=eq.pl", status: 200, json: ids(2) },
  {
    name: "negative array index",
    url: "authors?select=id&meta->langs->>-1=eq.en&order=id",
    status: 200,
    json: ids(1, 2),
  },
  {
    name: "what follows a filter key's JSON path is ignored, as in PostgREST (::text)",
    url: "authors?select=id&meta->>country::text=eq.PL",
    status: 200,
    json: ids(2),
  },
  {
    name: "order by a JSON path, nulls last",
    url: "authors?select=id&order=meta->awards->hugo.desc.nullslast",
    status: 200,
    json: ids(1, 2, 3),
  },
  // Order and paging of embedded resources; order by a to-one resource's column.
  {
    name: "order of an embedded resource",
    url: "authors?select=id,books(id)&books.order=id.desc&id=eq.1",
    status: 200,
    json: [{ id: 1, books: ids(2, 1) }],
  },
  {
    name: "limit and offset of an embedded resource",
    url: "authors?select=id,books(id)&books.order=id&books.limit=1&books.offset=1&id=eq.2",
    status: 200,
    json: [{ id: 2, books: ids(4) }],
  },
  {
    name: "order by a to-one resource's column",
    url: "books?select=id,authors(name)&order=authors(name).asc,id&id=lt.5",
    status: 200,
    json: [
      { id: 3, authors: { name: "Stanisław Lem" } },
      { id: 4, authors: { name: "Stanisław Lem" } },
      { id: 1, authors: { name: "Ursula Le Guin" } },
      { id: 2, authors: { name: "Ursula Le Guin" } },
    ],
  },
  {
    name: "nullsfirst",
    url: "books?select=id&order=rating.desc.nullsfirst,id",
    status: 200,
    json: ids(4, 1, 3, 2, 5),
  },
  {
    name: "a limit that is not an integer is ignored",
    url: "books?select=id&id=eq.1&limit=abc",
    status: 200,
    json: ids(1),
  },
  // Refusals, with PostgREST's message and details.
  {
    name: "unknown operator",
    url: "books?id=noop.0",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse filter (noop.0)" (line 1, column 1)',
      'unexpected "o" expecting "not" or operator (eq, gt, ...)',
    ),
  },
  {
    name: "bad is value",
    url: "books?id=is.maybe",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse filter (is.maybe)" (line 1, column 4)',
      'unexpected "m" expecting isVal: (null, not_null, true, false, unknown)',
    ),
  },
  {
    name: "a quantifier on neq",
    url: `books?id=neq(any).${q("{1}")}`,
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse filter (neq(any).{1})" (line 1, column 4)',
      'unexpected "(" expecting operator (eq, gt, ...)',
    ),
  },
  {
    name: "bad order direction",
    url: "books?order=id.ac",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse order (id.ac)" (line 1, column 4)',
      'unexpected "c" expecting "asc", "desc", "nullsfirst" or "nullslast"',
    ),
  },
  {
    name: "empty or",
    url: "books?or=()",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse logic tree (())" (line 1, column 4)',
      'unexpected ")" expecting field name (* or [a..z0..9_$]), negation operator (not) or logic operator (and, or)',
    ),
  },
  {
    name: "or with an unparenthesised in list",
    url: "books?or=(id.in.1,2,id.eq.3)",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse logic tree ((id.in.1,2,id.eq.3))" (line 1, column 10)',
      'unexpected "1" expecting "("',
    ),
  },
  {
    name: "negative limit",
    url: "books?limit=-1",
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "Limit should be greater than or equal to zero.",
    ),
    expect: { "content-range": null },
  },
  {
    name: "negative limit of an embedded resource",
    url: "authors?select=id,books(id)&books.limit=-1",
    status: 400,
    json: err("2201W", "LIMIT must not be negative"),
  },
  { name: "a quantified value that is not an array literal", url: "books?id=eq(any).1", status: 400 },
  {
    // PostgREST's RangeSpec: "succeeds if offset is negative as a no-op" (was PostgreSQL's 400 2201X here).
    name: "a negative offset reads from the first row",
    url: "books?select=id&offset=-1&order=id",
    status: 200,
    json: ids(1, 2, 3, 4, 5),
  },
  {
    name: "a limit beyond any integer selects every row",
    url: "books?select=id&id=lt.3&order=id&limit=99999999999999999999",
    status: 200,
    json: ids(1, 2),
  },
];

/** A small deterministic generator, so a failing request can be found again from the seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PIECES = [
  ...'abcdinotsqly.,()"\\{}-> :*!019',
  "id",
  "title",
  "meta",
  "not.",
  "eq.",
  "in.(",
  "or",
  "and(",
  "->>",
  "(any)",
  "fts(english)",
  "is.",
  "order",
];

function text(next: () => number, max: number): string {
  let s = "";
  for (let n = Math.floor(next() * max); n > 0; n--) s += PIECES[Math.floor(next() * PIECES.length)];
  return s;
}

Deno.test("data API grammar: PostgREST's query strings, accepted and refused alike", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
    await t.step("random filters, logic trees and orders never answer 5xx", async () => {
      const next = random(1126);
      for (let i = 0; i < 150; i++) {
        const params = new URLSearchParams();
        const kind = Math.floor(next() * 4);
        if (kind === 0) params.set(text(next, 4) || "id", text(next, 12));
        else if (kind === 1) params.set(next() < 0.5 ? "or" : "not.and", `(${text(next, 12)})`);
        else if (kind === 2) params.set("order", text(next, 8));
        else params.set(`authors.${text(next, 3)}`, text(next, 8));
        const res = await p.fetch(`/rest/v1/books?${params}`, { headers: { apikey: p.secretKey } });
        const body = await res.text();
        assert(res.status < 500, `${params} → ${res.status} ${body}`);
      }
    });
  } finally {
    await p.close();
  }
});
