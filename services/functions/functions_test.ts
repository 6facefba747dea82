import { functionStore } from "./store.ts";
import { assertEquals, within } from "../../tests/assert.ts";
import { startPlatform } from "../../tests/harness.ts";

Deno.test("FunctionService: a load that overlaps a redeploy never caches the old version", async () => {
  const p = await startPlatform();
  const service = p.platform.functions.service;
  const find = functionStore.find;
  try {
    await service.deploy("default", {
      name: "race",
      runtime: "deno",
      code: `export default () => new Response("v1");`,
    });
    // As when the cached entry expired: the next invoke loads the function.
    (service as unknown as { cache: { delete(key: string): void } }).cache.delete("default\u0000race");

    // The load reads the row of v1, then waits until the redeploy to v2 has finished.
    const { promise: redeployed, resolve } = Promise.withResolvers<void>();
    const { promise: read, resolve: hasRead } = Promise.withResolvers<void>();
    let held = false;
    functionStore.find = async (...args: Parameters<typeof find>) => {
      const row = await find(...args);
      if (!held && !args[2]) {
        held = true;
        hasRead();
        await redeployed;
      }
      return row;
    };
    const loading = service.loadActive("default", "race");
    // A load that never reads the row through the patched find ends the wait too; a liveness bound (30 s) on both.
    await within(
      Promise.race([
        read,
        Promise.resolve(loading).then(() =>
          Promise.reject(new Error("the load ended without the patched find"))
        ),
      ]),
      30_000,
      "the load's read of the row",
    );
    await service.update("default", "race", { code: `export default () => new Response("v2");` });
    resolve();
    const seen = await loading;
    assertEquals(held, true);
    assertEquals(seen?.fn.code.includes("v1"), true, "the overlapping load itself saw the row it read");

    const after = await service.loadActive("default", "race");
    assertEquals(
      after?.fn.code.includes("v2"),
      true,
      "once the redeploy finished, invokes get the new version",
    );
  } finally {
    functionStore.find = find;
    await p.close();
  }
});
