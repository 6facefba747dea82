import { assertEquals } from "../../tests/assert.ts";
import { FunctionLogs } from "./logs.ts";

Deno.test("function logs: bounded ring per function, newest first", () => {
  const logs = new FunctionLogs(3);
  for (let i = 1; i <= 5; i++) logs.add("f", i % 2 ? "info" : "error", `line ${i}`);
  logs.add("g", "info", "other");
  assertEquals(logs.read("f", 10).map((e) => e.message), ["line 5", "line 4", "line 3"]);
  assertEquals(logs.read("f", 2).map((e) => e.message), ["line 5", "line 4"]);
  assertEquals(logs.read("f", 10, "error").map((e) => e.message), ["line 4"]);
  assertEquals(logs.read("g", 10).length, 1);
  logs.drop("f");
  assertEquals(logs.read("f", 10), []);
});
