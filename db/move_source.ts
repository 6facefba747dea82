/**
 * The embedded side of a move to PostgreSQL: finds the PGlite directories under a data directory, tells whether
 * an engine holds one open, and opens one in this process (not in a worker: the move reads, nothing else runs).
 */
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { engineExtensions } from "./pglite_engine_extensions.ts";
import { allowBinaries } from "./pglite_library_guard.ts";
import { extensionFiles } from "./pglite_extensions.ts";
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

/**
 * Opens an embedded database directory as the platform does: the same extensions, the same server settings, and
 * the same loader lock. A project's SQL can plant a library for its catalog to load (a `pg_proc` row pointed at a
 * file it wrote): this process, which holds every project's data and the target's address, loads none.
 */
export async function openSource(dir: string): Promise<PGlite> {
  const extensions = engineExtensions(await extensionFiles());
  // The lock is this thread's, and the move opens several engines and runs pg_dump here: their WebAssembly is
  // allowed as the packages ship it.
  await allowPackagedBinaries();
  return await PGlite.create(dir, { extensions, startParams: startParams(pgliteSettings()) });
}

let packaged: Promise<void> | undefined;

/** PGlite's engine and pg_dump, as their packages' files hold them (nothing when they are not on disk). */
function allowPackagedBinaries(): Promise<void> {
  packaged ??= (async () => {
    const binaries = [
      new URL("./pglite.wasm", import.meta.resolve("@electric-sql/pglite")),
      new URL("./pg_dump.wasm", import.meta.resolve("@electric-sql/pglite-tools")),
    ];
    for (const url of binaries) if (url.protocol === "file:") allowBinaries([await Deno.readFile(url)]);
  })();
  return packaged;
}
