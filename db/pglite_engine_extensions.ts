/**
 * What every embedded engine opens with, whoever opens it (the platform's engine threads, the move to
 * PostgreSQL): the extensions' files written into its file system, then its loader locked to the libraries
 * found there (db/pglite_library_guard.ts), all before PostgreSQL starts and reads anything of the project's.
 */
import type { Extension } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import type { ExtensionFile } from "./pglite_extensions.ts";
import { guardLibraries, lockLibraries } from "./pglite_library_guard.ts";

/** What this file uses of PGlite's Emscripten module. */
interface EngineFiles {
  FS: {
    mkdirTree(path: string): void;
    writeFile(path: string, data: Uint8Array): void;
    readFile(path: string): Uint8Array;
    readdir(path: string): string[];
    stat(path: string): { mode: number };
    isDir(mode: number): boolean;
  };
  WASM_PREFIX: string;
}

/**
 * The extensions' files read by the platform (db/pglite_extensions.ts), written into the engine's file system
 * before PostgreSQL starts. Written, that is copied: a view of the process's shared bytes, which MEMFS could
 * keep instead, would be written in place by a project's SQL and loaded by the next project's engine. Then,
 * still before PostgreSQL starts and reads anything of the project's (its data directory, whose settings the
 * project's SQL can write), the libraries of the install tree become the only ones the engine loads.
 */
function extensionsFrom(files: ExtensionFile[]): Extension {
  return {
    name: "extensions",
    setup: (_pg, options) =>
      Promise.resolve({
        emscriptenOpts: {
          ...options,
          postRun: [...(options.postRun ?? []), (mod: EngineFiles) => {
            for (const { path, data } of files) {
              const full = `${mod.WASM_PREFIX}/${path}`;
              mod.FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
              mod.FS.writeFile(full, data);
            }
            lockLibraries(shippedLibraries(mod));
          }],
        },
      }),
  };
}

/** The libraries of the engine's install tree, read before any SQL has run (db/pglite_library_guard.ts). */
function shippedLibraries(mod: EngineFiles): Uint8Array[] {
  const found: Uint8Array[] = [];
  const walk = (dir: string) => {
    for (const name of mod.FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const path = `${dir}/${name}`;
      if (mod.FS.isDir(mod.FS.stat(path).mode)) walk(path);
      else if (name.endsWith(".so")) found.push(mod.FS.readFile(path));
    }
  };
  walk(`${mod.WASM_PREFIX}/lib`);
  return found;
}

/**
 * The `extensions` option of `PGlite.create`, with this thread's compiles guarded. Without the platform's files
 * (the packages not on disk), PGlite's own pgvector, which the lock may then refuse: that fallback fails closed.
 */
export function engineExtensions(files: ExtensionFile[] | undefined): Record<string, Extension> {
  guardLibraries();
  return files ? { extensions: extensionsFrom(files) } : { vector, extensions: extensionsFrom([]) };
}
