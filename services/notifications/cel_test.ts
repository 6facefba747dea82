import { assertEquals, assertRejects } from "../../tests/assert.ts";
import { checkExpression, evaluateExpression } from "./cel.ts";

Deno.test("CEL rules over event", async (t) => {
  const event = { type: "order.paid", data: { amount: 150, email: "a@example.com" } };
  await t.step("valid expressions check and evaluate", async () => {
    await checkExpression("condition", 'event.type == "order.paid" && event.data.amount > 100', "bool");
    await checkExpression("recipient_expr", "event.data.email", "string");
    assertEquals(await evaluateExpression("event.data.amount > 100", event), true);
    assertEquals(await evaluateExpression("event.data.email", event), "a@example.com");
  });
  const invalid: [string, string, "bool" | "string", RegExp][] = [
    ["syntax", "event.data.amount >", "bool", /not a valid CEL expression/],
    ["unknown variable", "foo == 1", "bool", /Unknown variable: foo/],
    ["type error", '1 + "a"', "bool", /no such overload/],
    ["wrong result type", '"x"', "bool", /must be a bool expression/],
  ];
  for (const [name, source, expect, pattern] of invalid) {
    await t.step(`${name} is refused at save`, async () => {
      await assertRejects(
        () => checkExpression("condition", source, expect),
        pattern,
      );
    });
  }
  await t.step("evaluation errors are one line", async () => {
    await assertRejects(
      () => evaluateExpression("event.data.missing > 1", event),
      /^No such key: missing$/,
    );
  });
});
