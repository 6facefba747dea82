import { assertEquals, assertRejects } from "../../tests/assert.ts";
import { FilterError, matchesFilter, parseFilter } from "./filter.ts";

Deno.test("realtime filter grammar", async (t) => {
  await t.step("parses every operator", () => {
    assertEquals(parseFilter("id=eq.5"), { column: "id", op: "eq", values: ["5"] });
    assertEquals(parseFilter("name=neq.a.b"), { column: "name", op: "neq", values: ["a.b"] });
    assertEquals(parseFilter("n=lt.-1.5").values, ["-1.5"]);
    for (const op of ["lte", "gt", "gte"]) assertEquals(parseFilter(`n=${op}.3`).op, op);
    assertEquals(parseFilter("s=in.(a,b,c)").values, ["a", "b", "c"]);
    assertEquals(parseFilter('s=in.("x,y",z)').values, ["x,y", "z"]);
    assertEquals(parseFilter('s=in.("q\\"uote")').values, ['q"uote']);
    assertEquals(parseFilter("s=eq.").values, [""]);
  });

  const bad: [string, RegExp][] = [
    ["", /column=op.value/],
    ["=eq.1", /column=op.value/],
    ["id", /column=op.value/],
    ["id=like.x", /not one of/],
    ["id=eq", /needs a value/],
    ["id;drop=eq.1", /not a valid column/],
    ['"id"=eq.1', /not a valid column/],
    ["id=in.1,2", /needs a list/],
    ["id=in.()", /needs a list/],
    ['id=in.("a)', /Unterminated/],
    ['id=in.("a"b)', /Expected a comma/],
    ["id=eq." + "x".repeat(2000), /longer than/],
  ];
  for (const [text, message] of bad) {
    await t.step(`refuses ${JSON.stringify(text.slice(0, 30))}`, async () => {
      await assertRejects(() => Promise.resolve().then(() => parseFilter(text)), message);
      try {
        parseFilter(text);
      } catch (err) {
        assertEquals(err instanceof FilterError, true);
      }
    });
  }

  await t.step("matches rows as SQL would", () => {
    const row = { id: 5, big: "9007199254740993", name: "bob", at: "2026-01-02T00:00:00Z", none: null };
    const cases: [string, boolean][] = [
      ["id=eq.5", true],
      ["id=eq.05", true],
      ["id=neq.5", false],
      ["id=lt.10", true],
      ["id=lt.5", false],
      ["id=lte.5", true],
      ["id=gt.4.5", true],
      ["id=gte.6", false],
      ["id=in.(1,5)", true],
      ["id=in.(1,2)", false],
      ["big=gt.100", true],
      ["name=eq.bob", true],
      ["name=lt.carol", true],
      ["name=in.(alice,bob)", true],
      ["at=gt.2026-01-01", true],
      ["none=eq.null", false],
      ["none=neq.x", false],
      ["missing=neq.x", false],
      ["id=eq.abc", false],
    ];
    for (const [text, expected] of cases) assertEquals(matchesFilter(parseFilter(text), row), expected, text);
    assertEquals(matchesFilter(parseFilter("id=eq.5"), null), false);
  });
});
