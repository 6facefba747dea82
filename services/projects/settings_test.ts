import { assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import type { Queryable } from "../../db/driver.ts";
import { Cipher } from "../../lib/crypto.ts";
import { dataSettingsStore, type StoredDataSettings } from "../data/store.ts";
import { ProjectService } from "./projects.ts";
import { ProjectSettings } from "./settings.ts";

Deno.test("project settings: kept per project; creating or deleting one reads that one's again, not the others'", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    const projects = new ProjectService(dbs, await Cipher.fromSecret("settings-test-secret"));
    // The platform's store, counting what it reads from the control database.
    const reads: string[] = [];
    const store = {
      find: (db: Queryable, ref: string) => {
        reads.push(ref);
        return dataSettingsStore.find(db, ref);
      },
      save: dataSettingsStore.save,
    };
    const settings = new ProjectSettings(dbs, store, (s: StoredDataSettings) => s.plan);
    await projects.create({ ref: "kept" });
    await settings.update("kept", { plan: true });
    reads.length = 0;
    assertEquals(await settings.resolve("kept"), true);
    const cached = reads.length; // PostgreSQL keeps them 10 s, PGlite until they change
    await projects.create({ ref: "other" });
    assertEquals(await settings.resolve("kept"), true);
    assertEquals(reads.length, cached, "another project's creation does not drop them");
    await projects.delete("other");
    assertEquals(await settings.resolve("kept"), true);
    assertEquals(reads.length, cached, "nor its deletion");

    // The same ref deleted and created again: a new project, with none of the old one's settings.
    await projects.delete("kept");
    await projects.create({ ref: "kept" });
    assertEquals(await settings.resolve("kept"), null);
    assertEquals(reads.at(-1), "kept");

    // What is kept of the projects' generations is bounded: past it, every project's settings are read once more.
    await settings.resolve("kept");
    for (let i = 0; i < 10_000; i++) dbs.projectsChanged(`churn-${i}`);
    const before = reads.length;
    assertEquals(await settings.resolve("kept"), null);
    assertEquals(await settings.resolve("kept"), null);
    assertEquals(reads.length, before + 1, "read again once, then kept");
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
