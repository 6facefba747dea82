import { assertEquals } from "../../tests/assert.ts";
import { DEFAULT_PERMISSIONS, storedPermissions } from "./permissions.ts";

Deno.test("stored permissions are bounded again: a field out of bounds is its default", () => {
  assertEquals(
    storedPermissions({ allow_net: ["API.example.com"], memory_mb: 256, timeout_secs: 10, cpu_ms: 500 }),
    { allow_net: ["api.example.com"], memory_mb: 256, timeout_secs: 10, cpu_ms: 500 },
  );
  assertEquals(
    storedPermissions({
      allow_net: ["*", "not a host!"],
      memory_mb: 100_000,
      timeout_secs: 99_999,
      cpu_ms: -1,
    }),
    DEFAULT_PERMISSIONS,
  );
  assertEquals(storedPermissions({ memory_mb: "1024" }), DEFAULT_PERMISSIONS);
  assertEquals(storedPermissions(null), DEFAULT_PERMISSIONS);
  assertEquals(storedPermissions({ memory_mb: 64 }), { ...DEFAULT_PERMISSIONS, memory_mb: 64 });
});
