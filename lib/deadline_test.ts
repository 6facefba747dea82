import { assert, assertEquals } from "../tests/assert.ts";
import { valueWithin, withDeadline } from "./deadline.ts";

/** Resolves when `signal` aborts, with its reason. */
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => signal.addEventListener("abort", () => resolve(signal.reason)));

Deno.test("withDeadline: the signal aborts with a TimeoutError once the time is up", async () => {
  const reason = await withDeadline(null, 10, aborted);
  assert(reason instanceof DOMException);
  assertEquals(reason.name, "TimeoutError");
});

Deno.test("withDeadline: the signal follows the outer signal, already aborted or aborted later", async () => {
  const outer = new AbortController();
  const later = withDeadline(outer.signal, 60_000, aborted);
  outer.abort(new Error("stopping"));
  assertEquals(String(await later), "Error: stopping");
  assertEquals(
    String(await withDeadline(outer.signal, 60_000, (s) => Promise.resolve(s.reason))),
    "Error: stopping",
  );
});

Deno.test("withDeadline: a call that ends first leaves no timer and no listener behind", async () => {
  // The test's sanitizers fail it if the 60 s timer is still pending when it ends.
  const outer = new AbortController();
  let inner: AbortSignal | undefined;
  assertEquals(await withDeadline(outer.signal, 60_000, (s) => Promise.resolve((inner = s, "done"))), "done");
  outer.abort(new Error("after the end"));
  assertEquals(inner?.aborted, false);
  await assertRejectsWith(withDeadline(null, 60_000, () => Promise.reject(new Error("failed"))), "failed");
});

async function assertRejectsWith(p: Promise<unknown>, message: string): Promise<void> {
  const err = await p.then(() => null, (e) => e);
  assert(err instanceof Error);
  assertEquals(err.message, message);
}

Deno.test("valueWithin: the value when in time, the fallback when late, and a late rejection stays handled", async () => {
  assertEquals(await valueWithin(Promise.resolve("in time"), 1000, "late"), "in time");
  const { promise, reject } = Promise.withResolvers<string>();
  assertEquals(await valueWithin(promise, 10, "late"), "late");
  reject(new Error("after the fallback")); // raced already: no unhandled rejection fails the test
  await new Promise((r) => setTimeout(r, 10));
});
