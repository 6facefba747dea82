import { assert, assertEquals } from "../tests/assert.ts";
import { extensionFiles } from "./pglite_extensions.ts";

// Code that escaped one engine must not be able to change what the next engine loads: the bytes each engine's
// thread receives are its own copy, not a view of the process's buffer.
Deno.test("extension files: each engine's thread receives a copy of the bytes, which it cannot write back", async () => {
  const files = await extensionFiles();
  assert(files && files.length > 0, "the extensions' archives are on disk here");
  assert(files.every((f) => !(f.data.buffer instanceof SharedArrayBuffer)));
  const library = files.find((f) => f.path.endsWith("/vector.so"))!;
  const before = library.data.slice(0, 64);
  const code =
    `self.onmessage = (e) => { for (const f of e.data) f.data.fill(0); self.postMessage("written"); };`;
  const url = URL.createObjectURL(new Blob([code], { type: "application/javascript" }));
  const worker = new Worker(url, { type: "module" });
  try {
    await new Promise((resolve, reject) => {
      worker.onmessage = resolve;
      worker.onerror = (e) => reject(new Error(e.message));
      worker.postMessage(files);
    });
    assertEquals(library.data.slice(0, 64), before);
    assert(before.some((b) => b !== 0));
  } finally {
    worker.terminate();
    URL.revokeObjectURL(url);
  }
});
