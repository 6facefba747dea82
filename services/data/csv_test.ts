import { assertEquals } from "../../tests/assert.ts";
import { CsvError, parseCsvBody } from "./csv.ts";

Deno.test("csv body: a header row, rows of text, NULL as null, quoted fields", () => {
  assertEquals(parseCsvBody(""), []);
  assertEquals(parseCsvBody("a,b\n"), []);
  assertEquals(parseCsvBody('id,name\r\n1,"a ""b"", c"\r\n2,NULL\n3,"NULL"\n4,\n'), [
    { id: "1", name: 'a "b", c' },
    { id: "2", name: null },
    { id: "3", name: null },
    { id: "4", name: "" },
  ]);
  assertEquals(parseCsvBody('x\n"line\nbreak"'), [{ x: "line\nbreak" }]);
  assertEquals(parseCsvBody("x,y\n1,2\n\n"), [{ x: "1", y: "2" }]);
});

/** The message of the CsvError `fn` throws. */
function csvError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof CsvError) return err.message;
    throw err;
  }
  throw new Error("no CsvError");
}

Deno.test("csv body: rows that do not fit the header and broken quoting are CsvError", () => {
  assertEquals(csvError(() => parseCsvBody("a,b\n1\n")), "Line 2 has 1 field, the header 2");
  assertEquals(csvError(() => parseCsvBody("a,b\n1,2,3\n")), "Line 2 has 3 fields, the header 2");
  assertEquals(csvError(() => parseCsvBody('a\n"open')), "A quoted CSV field is not closed");
  assertEquals(
    csvError(() => parseCsvBody('a\n"x"y')),
    "A quoted CSV field is followed by text before the next comma",
  );
  assertEquals(csvError(() => parseCsvBody('a\nx"y')), "A CSV field that is not quoted holds a quote");
  assertEquals(csvError(() => parseCsvBody("a,a\n1,2")), "The CSV header names a column twice");
});

Deno.test("fuzz: a CSV body either parses into rows of the header's keys or is a CsvError", () => {
  // A fixed seed: the same 3000 bodies every run, built from the characters CSV gives meaning to.
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const alphabet = ['"', ",", "\n", "\r", "a", "b", "NULL", " ", "é", "\\"];
  for (let i = 0; i < 3000; i++) {
    let body = "";
    const length = Math.floor(next() * 40);
    for (let j = 0; j < length; j++) body += alphabet[Math.floor(next() * alphabet.length)];
    try {
      const rows = parseCsvBody(body);
      const keys = rows.length > 0 ? Object.keys(rows[0]!).join("\0") : "";
      for (const row of rows) assertEquals(Object.keys(row).join("\0"), keys, JSON.stringify(body));
    } catch (err) {
      if (!(err instanceof CsvError)) throw new Error(`${JSON.stringify(body)}: ${err}`);
    }
  }
});
