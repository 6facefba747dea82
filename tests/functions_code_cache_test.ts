import { assert, assertEquals } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const BOUND = 1048576; // FUNCTIONS_CODE_CACHE_MB=1

/** A function whose code is `kb` KB: the answer and a long comment. */
const bigCode = (name: string, kb: number) =>
  `// ${"x".repeat(kb * 1024)}\nexport default () => new Response(${JSON.stringify(name)});`;

Deno.test("functions: the cache of loaded functions stays under its byte bound with big code", async (t) => {
  const p = await startPlatform({
    FUNCTIONS_CODE_CACHE_MB: "1",
    FUNCTIONS_MAX_HOSTS: "2",
    MAX_BODY_BYTES: "2097152",
  });
  const service = p.platform.functions.service;
  const deploy = (name: string, code: string) =>
    p.fetch("/v1/functions", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { name, runtime: "deno", code },
    }).then(json);
  const invoke = (name: string) =>
    p.fetch(`/functions/v1/${name}`, { method: "POST", headers: { apikey: p.publicKey } })
      .then(async (res) => ({ status: res.status, body: await res.text() }));
  try {
    await t.step(
      "six functions of 300 KB each: deployed, loaded, never more than the bound cached",
      async () => {
        const names = ["f1", "f2", "f3", "f4", "f5", "f6"];
        for (const name of names) {
          assertEquals((await deploy(name, bigCode(name, 300))).status, 201);
          assert(service.cachedBytes <= BOUND, `${service.cachedBytes} bytes cached after deploying ${name}`);
        }
        for (const name of names) {
          const loaded = await service.loadActive("default", name);
          assertEquals(loaded?.fn.name, name);
          assert(service.cachedBytes <= BOUND, `${service.cachedBytes} bytes cached after loading ${name}`);
        }
        assert(service.cachedBytes > 2 * 300 * 1024, "the cache still holds what fits");
      },
    );

    await t.step("a function larger than the bound is not cached, and still runs", async () => {
      assertEquals((await deploy("huge", bigCode("huge", 1100))).status, 201);
      assertEquals(await invoke("huge"), { status: 200, body: "huge" });
      assert(service.cachedBytes <= BOUND);
      assertEquals(await invoke("f6"), { status: 200, body: "f6" });
    });
  } finally {
    await p.close();
  }
});
