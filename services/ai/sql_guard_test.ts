import { parse } from "pgsql-ast-parser";
import { assertEquals, assertMatch } from "../../tests/assert.ts";
import { AppError } from "../../lib/errors.ts";
import { checkSelect } from "./sql_guard.ts";
import { fixQuantifiers, printChecked, tokenize } from "./sql_print.ts";

const READABLE = [{ schema: "public", name: "notes" }, { schema: "public", name: "users" }];

function refusal(sql: string): string {
  try {
    checkSelect(sql, READABLE);
  } catch (err) {
    if (err instanceof AppError) return err.message;
    throw err;
  }
  throw new Error(`Accepted: ${sql}`);
}

Deno.test("checkSelect refuses anything but one read-only SELECT over readable tables", () => {
  const refused: [string, RegExp][] = [
    ["DROP TABLE notes", /DROP/],
    ["SELECT 1; DELETE FROM notes", /2 statements/],
    ["DELETE FROM notes", /DELETE/],
    ["UPDATE notes SET body = 'x'", /UPDATE/],
    ["INSERT INTO notes VALUES (1)", /INSERT/],
    ["SELECT pg_sleep(100)", /function "pg_sleep"/],
    ["SELECT set_config('request.jwt.claims', '{}', true)", /function "set_config"/],
    ["SELECT pg_read_file('/etc/passwd')", /function "pg_read_file"/],
    ["SELECT public.anything(1)", /function "public.anything"/],
    ["WITH d AS (DELETE FROM notes RETURNING *) SELECT * FROM d", /DELETE/],
    ["SELECT * FROM notes FOR UPDATE", /FOR UPDATE/],
    ["SELECT * INTO copy FROM notes", /does not parse/],
    ["SELECT * FROM secrets", /"public.secrets" is not readable/],
    ["SELECT * FROM auth.users", /"auth.users" is not readable/],
    ["SELECT * FROM notes WHERE id = (SELECT count(*) FROM pg_catalog.pg_authid)", /pg_authid/],
    ["SELECT * FROM notes WHERE id = $1", /parameter/],
    ["SELECT * FROM generate_series(1, 100000000)", /generate_series/],
    ["select 1 from notes; -- \n drop table notes", /2 statements/],
    ["CREATE TABLE x (id int)", /CREATE/],
    ["WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r", /RECURSIVE/],
    [
      "SELECT * FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r) x",
      /RECURSIVE/,
    ],
    ["SELECT * FROM (WITH secrets AS (SELECT 1) SELECT * FROM secrets) x, secrets", /"public.secrets"/],
    // A quoted WITH name keeps its case: it does not hide the unquoted table of another name.
    ['WITH "Secrets" AS (SELECT 1) SELECT * FROM secrets', /"public.secrets" is not readable/],
  ];
  for (const [sql, reason] of refused) assertMatch(refusal(sql), reason, sql);
});

Deno.test("checkSelect accepts ordinary reads and prints what it checked", () => {
  const ok = checkSelect(
    "WITH recent AS (SELECT * FROM notes WHERE id > 1) SELECT u.email, count(*) AS n FROM recent r " +
      "JOIN users u ON u.id = r.owner WHERE r.id = ANY(ARRAY[1,2]) GROUP BY u.email ORDER BY n DESC LIMIT 5",
    READABLE,
  );
  assertEquals(ok.tables, [{ schema: "public", name: "notes" }, { schema: "public", name: "users" }]);
  assertMatch(ok.sql, /ANY \(/);
  assertEquals(checkSelect("select 1", READABLE).tables, []);
});

Deno.test("checkSelect: the printed SQL of ordinary questions runs in PostgreSQL (PGlite)", async () => {
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = await PGlite.create();
  try {
    await pg.exec(`
      create table notes (id int primary key, owner uuid, body text, created_at timestamptz default now(),
                          tags text[], data jsonb);
      insert into notes values (1, gen_random_uuid(), 'a(b', now(), '{x,y}', '{"k": 1}');
      create table users (id uuid primary key, email text);`);
    const queries = [
      "SELECT count(DISTINCT owner) FROM notes",
      "SELECT date_trunc('day', created_at) AS d, count(*) FROM notes GROUP BY 1 ORDER BY 1",
      "SELECT * FROM notes WHERE created_at > now() - interval '7 days'",
      "SELECT body FROM notes WHERE body ILIKE '%a%' AND id BETWEEN 1 AND 10",
      "SELECT id FROM notes WHERE 'x' = ANY(tags) AND id > ALL(ARRAY[-1, 0]) AND body = 'a(b'",
      "SELECT data->>'k' AS k, data->'k' FROM notes",
      "SELECT extract(year FROM created_at) FROM notes",
      "SELECT CASE WHEN id > 1 THEN 'big' ELSE 'small' END FROM notes",
      "SELECT n.body, u.email FROM notes n LEFT JOIN users u ON u.id = n.owner",
      "SELECT id FROM notes WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = notes.owner)",
      "SELECT id, row_number() OVER (ORDER BY created_at DESC) FROM notes",
      "SELECT coalesce(sum(id), 0)::int AS total FROM notes",
      "SELECT string_agg(body, ', ' ORDER BY id) FROM notes",
      "SELECT id FROM notes UNION SELECT 2",
      "SELECT * FROM (VALUES (1, 'a')) AS v(n, s)",
      "SELECT round(avg(id)::numeric, 2) FROM notes",
      "SELECT tags[1] FROM notes",
      "SELECT count(*) FILTER (WHERE id > 0) FROM notes",
      "SELECT DISTINCT ON (owner) owner, id FROM notes ORDER BY owner, id",
      "WITH recent AS (SELECT * FROM notes) SELECT count(*) FROM recent",
    ];
    for (const q of queries) {
      const { sql } = checkSelect(q, READABLE);
      await pg.query(sql).catch((err) => {
        throw new Error(`${q}\n  printed: ${sql}\n  ${(err as Error).message}`);
      });
    }
  } finally {
    await pg.close();
  }
});

/** A parse without source positions: two texts are the same query when these are equal. */
function tree(sql: string): string {
  const statements = parse(sql);
  return JSON.stringify(statements, (key, value) => key === "_location" ? undefined : value);
}

// Texts that the quantifier rewrite looks for, inside string literals, quoted names and comments.
const TRAPS = [
  `SELECT '("any" (x)' AS s, '"all" (' AS t, E'\\\\("some" (' AS u, 'it''s ("any" (' AS v`,
  `SELECT id FROM notes WHERE body = '("any" (' OR body = ')); DELETE FROM notes; --' ORDER BY id`,
  `SELECT id FROM notes WHERE body <> '"any" (' AND id = ANY(ARRAY[1, 3]) AND id > ALL(ARRAY[0]) ORDER BY id`,
  `SELECT 1 AS "x; DELETE FROM notes; --", '("some" (' AS "("")"`,
  `SELECT id FROM notes WHERE body = '("any" (' AND body <> ')) ; drop table notes ; select ((' -- ("any" (`,
];

Deno.test("checkSelect: the SQL that runs parses to exactly the checked query (literals untouched)", () => {
  for (const q of TRAPS) {
    const { sql } = checkSelect(q, READABLE);
    assertEquals(tree(sql), tree(q), `${q}\n  printed: ${sql}`);
  }
  // The literal that looks like the printer's quantifier survives byte for byte; the real quantifier is fixed.
  const { sql } = checkSelect(TRAPS[2]!, READABLE);
  assertMatch(sql, /body != \('"any" \('\)/);
  assertMatch(sql, /id = ANY \(/);
});

Deno.test("fixQuantifiers rewrites code tokens only", () => {
  assertEquals(
    fixQuantifiers(`SELECT ('("any" (x)'), (a = ("any" (b) )), "("")"`),
    `SELECT ('("any" (x)'), (a = ANY (b) ), "("")"`,
  );
  assertEquals(fixQuantifiers(`SELECT 1 -- ("any" (x)\n`), `SELECT 1 -- ("any" (x)\n`);
  assertEquals(
    fixQuantifiers(`SELECT /* ("all" ( /* nested */ */ 1`),
    `SELECT /* ("all" ( /* nested */ */ 1`,
  );
  assertEquals(fixQuantifiers(`SELECT E'\\' ("any" (' AS x`), `SELECT E'\\' ("any" (' AS x`);
  assertEquals(fixQuantifiers(`SELECT $q$("some" ($q$`), `SELECT $q$("some" ($q$`);
  assertEquals(
    tokenize(`a'b''c'"d""e"`).map((t) => t.kind),
    ["code", "string", "quoted"],
  );
});

Deno.test("printChecked refuses a tree whose printed text would read as another query", () => {
  // A name the printer cannot quote safely: printed as-is it would add a column (and could add anything).
  const forged = parse("SELECT 1 AS x")[0]!;
  (forged as { columns: { alias?: { name: string } }[] }).columns[0]!.alias = { name: 'x", 2 AS "y' };
  assertEquals(printChecked(forged), null);
  assertEquals(printChecked(parse("SELECT 1 AS x")[0]!), "SELECT (1) AS x");
});

Deno.test("checkSelect: literals shaped like the rewrite come back byte for byte from PostgreSQL (PGlite)", async () => {
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = await PGlite.create();
  try {
    await pg.exec(`
      create table notes (id int primary key, owner uuid, body text);
      create table users (id uuid primary key, email text);
      insert into notes values (1, null, '("any" ('), (2, null, '"any" ('), (3, null, 'plain');`);
    const { sql } = checkSelect(TRAPS[0]!, READABLE);
    const { rows } = await pg.query(sql);
    assertEquals(rows, [{ s: '("any" (x)', t: '"all" (', u: '\\("some" (', v: 'it\'s ("any" (' }]);
    const hits = await pg.query<{ id: number }>(checkSelect(TRAPS[1]!, READABLE).sql);
    assertEquals(hits.rows, [{ id: 1 }]);
    const others = await pg.query<{ id: number }>(checkSelect(TRAPS[2]!, READABLE).sql);
    assertEquals(others.rows, [{ id: 1 }, { id: 3 }]);
    const smuggled = await pg.query<{ id: number }>(checkSelect(TRAPS[4]!, READABLE).sql);
    assertEquals(smuggled.rows, [{ id: 1 }]);
    assertEquals((await pg.query("select count(*)::int as n from notes")).rows, [{ n: 3 }]);
  } finally {
    await pg.close();
  }
});
