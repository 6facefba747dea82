import { assert, assertEquals } from "../tests/assert.ts";
import { deserializeError, serializeError } from "./pglite_protocol.ts";

Deno.test("errors cross the engine's thread with their message, name and SQLSTATE fields", () => {
  const sent = Object.assign(new Error("duplicate key"), {
    code: "23505",
    detail: "Key (id)=(1)",
    position: 3,
  });
  sent.name = "DatabaseError";
  const got = deserializeError(structuredClone(serializeError(sent)));
  assertEquals([got.name, got.message], ["DatabaseError", "duplicate key"]);
  assertEquals({ ...got }, { name: "DatabaseError", code: "23505", detail: "Key (id)=(1)", position: 3 });
});

// What an engine's thread sends is not trusted: code that escaped its engine could send anything.
Deno.test("a forged error cannot replace an Error's own members or prototype", () => {
  const forged = JSON.parse(
    `{"name": {"x": 1}, "message": 42, "fields": {"__proto__": {"polluted": true}, "toString": 1, "valueOf": 1,
      "stack": "fake stack", "message": "other", "constructor": 1, "code": "XX000", "nested": {"a": 1}}}`,
  );
  const err = deserializeError(forged);
  assertEquals([err.message, err.name, String(err)], ["42", "[object Object]", "[object Object]: 42"]);
  assert(err.stack !== "fake stack");
  assertEquals(Object.getPrototypeOf(err), Error.prototype);
  assertEquals((err as unknown as Record<string, unknown>).code, "XX000");
  assertEquals((err as unknown as Record<string, unknown>).nested, undefined);
  assertEquals(({} as Record<string, unknown>).polluted, undefined);
});
