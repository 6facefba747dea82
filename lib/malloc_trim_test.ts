import { assertEquals } from "../tests/assert.ts";
import { mallocTrim } from "./malloc_trim.ts";

Deno.test("mallocTrim runs wherever glibc is the C library", () => {
  const glibc = Deno.build.os === "linux" && !Deno.readTextFileSync("/proc/self/maps").includes("musl");
  assertEquals(mallocTrim(), glibc);
});
