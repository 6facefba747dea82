/**
 * The child process of db/pglite_init.ts: initdb in a new directory, then, when asked, the platform's migrations
 * on an engine opened as the platform opens one; its clean close writes the rest file of a project.
 *
 *   deno run --allow-read --allow-write=<dir>[,<rest file>…] --allow-env --unstable-worker-options \
 *     db/pglite_init_child.ts <dir> '<job json>'
 */
import { PGlite } from "@electric-sql/pglite";
import { type ChildJob, isPgliteDir } from "./pglite_init.ts";
import { configurePglite } from "./pglite_health.ts";
import { openPglite, removeRestFile } from "./pglite.ts";
import { startParams } from "./pglite_start.ts";
import { migrate, readMigrations } from "./migrate.ts";
import { projectDueAt } from "./project_due.ts";
import { schemaMemo } from "./rest/schema.ts";
import { setLogLevel } from "../lib/log.ts";

async function child(dir: string, job: ChildJob): Promise<void> {
  if (!await isPgliteDir(dir)) {
    const pg = await PGlite.create(dir, { startParams: startParams(job.settings) });
    await pg.close();
  }
  const prepare = job.prepare;
  if (!prepare) return;
  setLogLevel("warn");
  configurePglite(prepare.limits);
  const memoSchemas = prepare.rest?.memoSchemas;
  const db = await openPglite(dir, {
    searchPath: prepare.searchPath,
    sharedBuffersMb: prepare.sharedBuffersMb,
    closeWhenIdle: prepare.rest
      ? {
        dueAt: projectDueAt,
        restFile: prepare.rest.file,
        restTag: prepare.rest.tag,
        memo: memoSchemas ? (q) => schemaMemo(q, memoSchemas) : undefined,
      }
      : undefined,
  });
  try {
    await migrate(db, await readMigrations(prepare.migrations));
  } catch (err) {
    await db.close();
    // Its schema is not this version's: no rest file may say otherwise to the platform.
    if (prepare.rest) await removeRestFile(prepare.rest.file);
    throw err;
  }
  await db.close();
}

if (import.meta.main) {
  const [dir, job] = Deno.args;
  // An engine's thread does not keep a process's event loop alive: this child has nothing else to, and would
  // end while its engine still closes.
  const alive = setInterval(() => {}, 60_000);
  try {
    await child(dir!, JSON.parse(job ?? "{}"));
  } finally {
    clearInterval(alive);
  }
}
