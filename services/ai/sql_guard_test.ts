import { assertEquals, assertMatch } from "../../tests/assert.ts";
import { AppError } from "../errors.ts";
import { checkSelect } from "./sql_guard.ts";

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
