import { assert, assertEquals } from "../tests/assert.ts";
import { droppedLinesText, LOG_BURST, LogBudget } from "./log_budget.ts";
import { Runtime } from "./supervisor.ts";
import { GET, OPTIONS, spec, text } from "./testing.ts";

Deno.test("log budget: a burst, then the sustained rate; the dropped lines are counted and reported once", () => {
  let now = 0;
  const budget = new LogBudget(10, 20, () => now);
  let admitted = 0;
  for (let i = 0; i < 50; i++) if (budget.take()) admitted++;
  assertEquals(admitted, 20);
  assertEquals(budget.report(true), 30);
  assertEquals(budget.report(true), 0);
  now += 500; // half a second: 5 lines
  admitted = 0;
  for (let i = 0; i < 50; i++) if (budget.take()) admitted++;
  assertEquals(admitted, 5);
  // A report is due at most once a second unless forced.
  assertEquals(budget.report(), 0);
  now += 1000;
  assertEquals(budget.report(), 45);
  now += 60_000; // a quiet minute refills the burst, no more
  admitted = 0;
  for (let i = 0; i < 50; i++) if (budget.take()) admitted++;
  assertEquals(admitted, 20);
});

Deno.test("runtime: a function that floods its log has the surplus counted, not sent", async () => {
  const lines: string[] = [];
  const rt = await Runtime.create(OPTIONS, (_fn, _level, line) => lines.push(line));
  const total = 100_000;
  try {
    const fn = spec(
      "flood",
      `export default () => {
        for (let i = 0; i < ${total}; i++) console.log("line " + i);
        return new Response("done");
      };`,
    );
    assertEquals(text(await rt.invoke(fn, GET)), "done");
    const written = lines.filter((l) => l.startsWith("line "));
    const reports = lines.filter((l) => l.includes("log lines dropped"));
    const dropped = reports.reduce((n, l) => n + Number(l.split(" ")[0]), 0);
    // Every line is either in the log or counted in a report; the burst is the first lines.
    assertEquals(written.length + dropped, total);
    assert(reports.length >= 1 && dropped > 0, `no line dropped: ${written.length} written`);
    assertEquals(written.slice(0, LOG_BURST), Array.from({ length: LOG_BURST }, (_, i) => `line ${i}`));
    for (const r of reports) assertEquals(r, droppedLinesText(Number(r.split(" ")[0])));
    // Other functions go on.
    assertEquals(text(await rt.invoke(spec("after", `export default () => new Response("ok")`), GET)), "ok");
  } finally {
    await rt.close();
  }
});
