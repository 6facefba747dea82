import { assertEquals } from "../../tests/assert.ts";
import { rowsToCsv } from "./csv.ts";

Deno.test("csv: header, quoting, nulls and JSON values", () => {
  assertEquals(rowsToCsv("[]"), "");
  assertEquals(
    rowsToCsv(
      JSON.stringify([{ id: 1, name: 'a "b", c', tags: ["x"], note: null }, { id: 2, name: "line\nbreak" }]),
    ),
    'id,name,tags,note\n1,"a ""b"", c","[""x""]",\n2,"line\nbreak",,',
  );
});
