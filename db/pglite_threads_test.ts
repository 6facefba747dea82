import { assertEquals } from "../tests/assert.ts";
import { enginePermissions, engineThread } from "./pglite_threads.ts";

const PROBE = new URL("../tests/fixtures/engine_thread_probe.ts", import.meta.url);

Deno.test("an engine's thread reads and writes its own directory, reads PGlite's package, and reaches nothing else", async () => {
  const root = await Deno.makeTempDir({ prefix: "engine-perms-" });
  const [dir, other] = [`${root}/projects/a`, `${root}/projects/b`];
  for (const d of [dir, other]) {
    await Deno.mkdir(d, { recursive: true });
    await Deno.writeTextFile(`${d}/PG_VERSION`, "17");
  }
  const worker = new Worker(PROBE, { type: "module", deno: { permissions: enginePermissions(dir) } });
  try {
    const answer = await new Promise<Record<string, string>>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(e.message));
      worker.postMessage({ dir, other, pglite: import.meta.resolve("@electric-sql/pglite") });
    });
    assertEquals(answer, {
      readOwn: "ok",
      writeOwn: "ok",
      readPglite: "ok",
      readOther: "NotCapable",
      writeOther: "NotCapable",
      writePglite: "NotCapable",
      readEtc: "NotCapable",
      env: "NotCapable",
      net: "NotCapable",
      fetch: "NotCapable",
      run: "NotCapable",
      ffi: "NotCapable",
      sys: "NotCapable",
      kv: "NotCapable",
    });
  } finally {
    worker.terminate();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("each engine's thread is started with the permissions of its own directory", () => {
  const started: unknown[] = [];
  const Real = globalThis.Worker;
  globalThis.Worker = class {
    constructor(_url: URL, options: unknown) {
      started.push(options);
    }
  } as unknown as typeof Worker;
  try {
    engineThread("/data/projects/a");
    engineThread("/data/projects/b");
  } finally {
    globalThis.Worker = Real;
  }
  assertEquals(started, [
    { type: "module", deno: { permissions: enginePermissions("/data/projects/a") } },
    { type: "module", deno: { permissions: enginePermissions("/data/projects/b") } },
  ]);
  assertEquals(enginePermissions("/data/projects/a").write, ["/data/projects/a"]);
});
