import { assertEquals } from "../../tests/assert.ts";
import { startPlatform } from "../../tests/harness.ts";

Deno.test("function logs: kept in the project database, newest first, the newest lines of each function", async () => {
  const p = await startPlatform({ FUNCTIONS_LOG_LINES: "10" });
  try {
    const deploy = async (name: string) => {
      const res = await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "deno", code: "export default () => new Response('ok')" },
      });
      assertEquals(res.status, 201);
      return (await res.json()).data.id as string;
    };
    const f = await deploy("f");
    const g = await deploy("g");
    const logs = p.platform.functions.logs;
    for (let i = 1; i <= 15; i++) logs.add(f, i % 2 ? "info" : "error", `line ${i}`);
    logs.add(g, "info", "other\0with a NUL");
    logs.add("00000000-0000-4000-8000-000000000000", "info", "of no known function");
    const messages = async (id: string, limit: number, level?: "error") =>
      (await logs.read("default", id, limit, level)).map((e) => e.message);
    assertEquals(await messages(f, 3), ["line 15", "line 14", "line 13"]);
    assertEquals(await messages(f, 100), Array.from({ length: 10 }, (_, i) => `line ${15 - i}`));
    assertEquals(await messages(f, 100, "error"), ["line 14", "line 12", "line 10", "line 8", "line 6"]);
    assertEquals(await messages(g, 10), ["otherwith a NUL"]);
    const [row] = await p.internalSql(
      "select count(*)::int as n from platform.function_logs where function_id = $1",
      [f],
    );
    assertEquals(row?.n, 10, "older lines are deleted");
    const del = await p.fetch("/v1/functions/f", { method: "DELETE", headers: { apikey: p.secretKey } });
    assertEquals(del.status, 200);
    await del.body?.cancel();
    logs.add(f, "info", "after the deletion");
    assertEquals(await messages(f, 10), []);
  } finally {
    await p.close();
  }
});
