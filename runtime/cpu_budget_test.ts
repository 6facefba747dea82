import { assertEquals } from "../tests/assert.ts";
import { CpuBudget } from "./cpu_budget.ts";

Deno.test("CpuBudget: a lone call gets its CPU time, no more", () => {
  const b = new CpuBudget(100, 1000);
  b.started();
  b.ended(); // the first call, which loaded the function
  b.started();
  assertEquals(b.spend(100), true);
  assertEquals(b.spend(10), false);
});

Deno.test("CpuBudget: the first call may also load the function; a module that loads forever is stopped", () => {
  const first = new CpuBudget(100, 1000);
  first.started();
  assertEquals(first.spend(1100), true);
  assertEquals(first.spend(10), false);
  const noCall = new CpuBudget(100, 1000);
  assertEquals(noCall.spend(1000), true);
  assertEquals(noCall.spend(10), false, "loaded at deploy, with no call: its top-level code has loadMs");
});

Deno.test("CpuBudget: calls in flight together share what they brought", () => {
  const b = new CpuBudget(100, 0);
  b.started();
  b.started();
  b.started();
  assertEquals(b.spend(300), true);
  assertEquals(b.spend(10), false);
});

Deno.test("CpuBudget: work left running after the answer draws on what its call left, one call's worth", () => {
  const lone = new CpuBudget(100, 0);
  lone.started();
  lone.spend(30);
  lone.ended();
  assertEquals(lone.spend(70), true);
  assertEquals(lone.spend(10), false);

  const many = new CpuBudget(100, 0);
  for (let i = 0; i < 10; i++) many.started();
  for (let i = 0; i < 10; i++) many.ended();
  assertEquals(many.spend(100), true, "ten calls that used nothing leave one call's worth, not ten");
  assertEquals(many.spend(10), false);
});

Deno.test("CpuBudget: a call on an idle host starts from its own time; the leftover is not carried", () => {
  const b = new CpuBudget(100, 0);
  b.started();
  b.ended(); // used nothing: 100 left for work left running
  b.started();
  assertEquals(b.spend(100), true);
  assertEquals(b.spend(10), false);
});
