import { assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { Cipher } from "../../lib/crypto.ts";
import { ProjectService } from "./projects.ts";

Deno.test("project preload: a key rotated while the preload reads is not kept working", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    const real = await Cipher.fromSecret("preload-test-secret");
    // The preload's first decryption waits until the rotation below is done.
    let hold = false;
    let reached!: () => void;
    const atHold = new Promise<void>((resolve) => reached = resolve);
    let release!: () => void;
    const held = new Promise<void>((resolve) => release = resolve);
    const cipher: Cipher = Object.assign(Object.create(real), {
      decrypt: async (text: string) => {
        if (hold) {
          hold = false;
          reached();
          await held;
        }
        return await real.decrypt(text);
      },
    });
    const projects = new ProjectService(dbs, cipher);
    await projects.create({ ref: "rotating" });
    const old = (await projects.keys("rotating")).secret_key;
    hold = true;
    const preloading = projects.preload();
    // On PostgreSQL nothing is preloaded (other instances write too): nothing is held.
    await Promise.race([atHold, preloading]);
    hold = false;
    const rotated = await projects.rotateKey("rotating", "secret");
    release();
    await preloading;
    assertEquals(await projects.lookupKey(old), null);
    assertEquals(await projects.lookupKey(rotated.secret_key), { ref: "rotating", kind: "secret" });
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
