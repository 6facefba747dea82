/**
 * The threads embedded engines run on. Each engine has a thread of its own, started with only the permissions
 * an engine needs: to read PGlite's package (its file bundle) and to read and write its own data directory.
 * No network, environment, subprocess, FFI or system access, and no other file: SQL that found a way to run
 * JavaScript in its engine (an escape from PostgreSQL's WebAssembly) would still reach nothing but its own
 * database's files. So a thread is started for one directory and never reused for another (no spare thread
 * waits: its permissions would have to cover every directory it might open).
 *
 * PGlite's WebAssembly module is compiled once per process and passed to every engine's thread; V8 shares a
 * module's compiled code between the threads that instantiate it, so the functions one engine compiled (and
 * optimized) on first use are compiled for the next one too.
 */

const WORKER = new URL("./pglite_worker.ts", import.meta.url);

let compiled: Promise<WebAssembly.Module | undefined> | undefined;

/** PGlite's entry module as a file URL, or undefined when the package is not on a local disk. */
function pgliteEntry(): URL | undefined {
  const entry = new URL(import.meta.resolve("@electric-sql/pglite"));
  return entry.protocol === "file:" ? entry : undefined;
}

/**
 * PGlite's WebAssembly module, compiled once for the process. Undefined when the package's files are not on
 * disk where this process can read them: each engine then compiles its own (as PGlite does by itself).
 */
export function engineModule(): Promise<WebAssembly.Module | undefined> {
  compiled ??= (async () => {
    const entry = pgliteEntry();
    if (!entry) return undefined;
    try {
      return await WebAssembly.compile(await Deno.readFile(new URL("./pglite.wasm", entry)));
    } catch {
      return undefined;
    }
  })();
  return compiled;
}

/** What an engine's thread may do: read PGlite's package and its directory, write its directory. */
export function enginePermissions(dir: string): Deno.PermissionOptionsObject {
  const entry = pgliteEntry();
  return {
    read: entry ? [dir, new URL(".", entry).pathname] : [dir],
    write: [dir],
    net: false,
    env: false,
    run: false,
    ffi: false,
    sys: false,
    import: false,
  };
}

/** A new thread for the engine of the database in `dir`. */
export function engineThread(dir: string): Worker {
  return new Worker(WORKER, { type: "module", deno: { permissions: enginePermissions(dir) } });
}
