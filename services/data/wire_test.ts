// Unit rows of PostgREST's wire rules: media types, Prefer, Content-Location, the SQLSTATE status table, and
// the fuzzy hints; the new parsers are fuzzed (bounded, seeded) for "a clear 4xx or an answer, never a crash".
import { assert, assertEquals } from "../../tests/assert.ts";
import { FuzzySet } from "../../lib/fuzzy.ts";
import { RestError } from "../../lib/rest_errors.ts";
import { contentLocation } from "./content_location.ts";
import { negotiate, negotiateOpenApi, parseAccept } from "./media.ts";
import { fromDatabaseError, statusOfSqlState } from "./pg_errors.ts";
import { appliedPreferences, parsePrefer } from "./prefer.ts";

/** The RestError `fn` throws (fails when it throws nothing or something else). */
function thrown(fn: () => unknown): RestError {
  try {
    fn();
  } catch (e) {
    assert(e instanceof RestError, String(e));
    return e;
  }
  throw new Error("nothing thrown");
}

Deno.test("Accept: order by q, then parameters, then fewer stars", () => {
  assertEquals(parseAccept("*/*;q=0.8, text/csv, application/json;q=0.9"), [
    "text/csv",
    "application/json",
    "*/*",
  ]);
  assertEquals(parseAccept("text/*, text/csv;x=1"), ["text/csv;x=1", "text/*"]);
  const rows: [string | undefined, string][] = [
    [undefined, "application/json; charset=utf-8"],
    ["*/*", "application/json; charset=utf-8"],
    ["application/json;charset=utf-8", "application/json; charset=utf-8"],
    ["text/csv", "text/csv; charset=utf-8"],
    ["application/vnd.pgrst.object", "application/vnd.pgrst.object+json; charset=utf-8"],
    ["application/vnd.pgrst.array+json", "application/json; charset=utf-8"],
    ["text/html, */*;q=0.1", "application/json; charset=utf-8"],
  ];
  for (const [accept, type] of rows) assertEquals(negotiate(accept).contentType, type, accept);
  const e = thrown(() => negotiate("text/html, image/png;q=0.2"));
  assertEquals([e.status, e.code, e.message], [
    406,
    "PGRST107",
    "None of these media types are available: text/html, image/png",
  ]);
  assertEquals(
    negotiateOpenApi("application/openapi+json").contentType,
    "application/openapi+json; charset=utf-8",
  );
  assertEquals(thrown(() => negotiateOpenApi("text/csv")).code, "PGRST107");
});

Deno.test("Prefer: first value wins, unknown ones kept, applied in PostgREST's order", () => {
  const p = parsePrefer(
    "count=exact, return=minimal, return=representation, foo, max-affected=5, handling=strict",
  );
  assertEquals([p.return, p.count, p.maxAffected, p.invalid], ["minimal", "exact", 5, ["foo"]]);
  assertEquals(appliedPreferences(p, "update"), [
    "return=minimal",
    "count=exact",
    "handling=strict",
    "max-affected=5",
  ]);
  assertEquals(appliedPreferences(p, "read"), ["count=exact", "handling=strict"]);
  const r = parsePrefer("resolution=merge-duplicates,missing=default");
  assertEquals(appliedPreferences(r, "insert", true), ["resolution=merge-duplicates", "missing=default"]);
  assertEquals(appliedPreferences(r, "insert", false), ["missing=default"]);
});

Deno.test("Content-Location: sorted, repeated keys joined, encoded as PostgREST", () => {
  assertEquals(contentLocation("t", ""), "/t");
  assertEquals(contentLocation("t", "?a=1&c=3&b=2&d"), "/t?a=1&b=2&c=3&d=");
  assertEquals(contentLocation("t", "?x=in.(1,2)&x=gt.0"), "/t?x=in.%281%2C2%29,gt.0");
  assertEquals(contentLocation("t", "?q=a+b%20c"), "/t?q=a%20b%20c");
  assertEquals(contentLocation("t", "?n=%C5%82"), "/t?n=%C3%85%C2%82");
});

Deno.test("SQLSTATE → status as PostgREST's table", () => {
  const rows: [string, number, string?][] = [
    ["23505", 409],
    ["23503", 409],
    ["25006", 405],
    ["21000", 400, "UPDATE requires a WHERE clause"],
    ["21000", 500, "more than one row returned by a subquery used as an expression"],
    ["22023", 401, 'role "x" does not exist'],
    ["22023", 400],
    ["22P02", 400],
    ["42883", 404],
    ["42P01", 404],
    ["42P17", 500],
    ["42501", 401],
    ["08006", 503],
    ["53100", 503],
    ["53400", 500],
    ["57014", 500],
    ["57P01", 503],
    ["40001", 500],
    ["P0001", 400],
    ["P0002", 500],
    ["XX000", 500],
    ["PT418", 418],
    ["PT999", 500],
    ["54001", 400],
    ["0P000", 403],
    ["28000", 403],
    ["HV000", 500],
    ["99999", 400],
  ];
  for (const [state, status, message] of rows) {
    assertEquals(statusOfSqlState(state, "anon", message), status, state);
  }
  assertEquals(statusOfSqlState("42501", "authenticated"), 403);
  const e = fromDatabaseError(Object.assign(new Error("permission denied"), { code: "42501" }), "anon");
  assertEquals((e as RestError).headers, { "www-authenticate": "Bearer" });
});

Deno.test("a connection lost under the request: 503 PGRST001 without the driver's words; 57P01 as a SQLSTATE", () => {
  for (const code of ["EPIPE", "ECONNRESET", "CONNECTION_CLOSED", "CONNECTION_DESTROYED"]) {
    const e = fromDatabaseError(
      Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), { code }),
      "anon",
    ) as RestError;
    assertEquals(
      [e.status, e.code, e.message, e.details],
      [503, "PGRST001", "Database client error. Retrying the connection.", null],
      code,
    );
  }
  const ended = fromDatabaseError(
    Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }),
    "anon",
  ) as RestError;
  assertEquals([ended.status, ended.code, ended.message], [
    503,
    "57P01",
    "The database could not run the request",
  ]);
  // A tenant's own `RAISE SQLSTATE 'EPIPE'` is a SQLSTATE like any other: its message, 400.
  const raised = fromDatabaseError(
    Object.assign(new Error("mine"), { code: "EPIPE", severity: "ERROR" }),
    "anon",
  ) as RestError;
  assertEquals([raised.status, raised.code, raised.message], [400, "EPIPE", "mine"]);
});

Deno.test("fuzzy hints: close names only", () => {
  const set = new FuzzySet(["books", "authors", "reviews", "book_genres"]);
  assertEquals(set.getOne("bookz", 0.75), "books");
  assertEquals(set.getOne("authorz", 0.75), "authors");
  assertEquals(set.getOne("qqqqqq", 0.75), undefined);
  assertEquals(set.getOne("BOOKS"), "books");
});

Deno.test("fuzz: Accept, Prefer and raised errors never throw anything but a RestError", () => {
  let seed = 26;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const alphabet = 'abjsonvd.pgrstobject+/*;q=0.5,"| -nulstripedcv\u0000é{}:[]';
  const text = () =>
    Array.from({ length: Math.floor(rand() * 40) }, () => alphabet[Math.floor(rand() * alphabet.length)])
      .join("");
  for (let i = 0; i < 3000; i++) {
    const s = text();
    try {
      negotiate(s);
    } catch (e) {
      assert(e instanceof RestError && e.status === 406, s);
    }
    parsePrefer(s);
    contentLocation("t", s);
    const raised = fromDatabaseError(Object.assign(new Error(s), { code: "PGRST", detail: text() }), "anon");
    assert(raised instanceof RestError, s);
    new FuzzySet([text(), text()]).getOne(s);
  }
});
