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
 * The embedded directories that an engine holds open: PGlite writes `postmaster.pid` when it opens a directory
 * and removes it when it closes. One left by an engine that was killed reads the same; starting and stopping the
 * platform once clears it.
 */
export async function openDirectories(dataDir: string): Promise<string[]> {
  const dirs = [controlDir(dataDir)];
  try {
    for await (const entry of Deno.readDir(join(dataDir, "pglite", "projects"))) {
      if (entry.isDirectory) dirs.push(projectDir(dataDir, entry.name));
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const held: string[] = [];
  for (const dir of dirs) if (await exists(join(dir, "postmaster.pid"))) held.push(dir);
  return held;
}

/** Opens an embedded database directory as the platform does (pgvector loaded, the same server settings). */
export async function openSource(dir: string): Promise<PGlite> {
  return await PGlite.create(dir, { extensions: { vector }, startParams: startParams(pgliteSettings()) });
}
