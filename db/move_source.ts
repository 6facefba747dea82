/**
 * The embedded side of a move to PostgreSQL: finds the PGlite directories under a data directory, tells whether
 * an engine holds one open, and opens one in this process (not in a worker: the move reads, nothing else runs).
 */
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { startParams } from "./pglite_start.ts";
import { pgliteSettings } from "./pglite_settings.ts";

/** The control directory of the embedded databases under `dataDir`. */
export function controlDir(dataDir: string): string {
  return join(dataDir, "pglite", "control");
}

/** The directory of one project's embedded database under `dataDir`. */
export function projectDir(dataDir: string, ref: string): string {
  return join(dataDir, "pglite", "projects", ref);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** Whether `dir` holds an embedded database (initdb has run there). */
export function isDatabaseDir(dir: string): Promise<boolean> {
  return exists(join(dir, "PG_VERSION"));
}

/**
 * What a running platform holds open under `dataDir`: PGlite writes `postmaster.pid` in a directory when it opens
 * it and removes it when it closes; SQLite keeps `<file>-shm` beside a KV file while a process has it open (a
 * local KV: `kvPath`, or `<dataDir>/kv.sqlite3`; none when KV is remote). A process that was killed leaves them
 * behind too: starting and stopping the platform once clears them.
 */
export async function heldOpen(dataDir: string, kvPath: string | null): Promise<string[]> {
  const markers = [join(controlDir(dataDir), "postmaster.pid")];
  try {
    for await (const entry of Deno.readDir(join(dataDir, "pglite", "projects"))) {
      if (entry.isDirectory) markers.push(join(projectDir(dataDir, entry.name), "postmaster.pid"));
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  if (kvPath !== null) markers.push(`${kvPath}-shm`);
  const held: string[] = [];
  for (const marker of markers) if (await exists(marker)) held.push(marker);
  return held;
}

/** Opens an embedded database directory as the platform does (pgvector loaded, the same server settings). */
export async function openSource(dir: string): Promise<PGlite> {
  return await PGlite.create(dir, { extensions: { vector }, startParams: startParams(pgliteSettings()) });
}
