/**
 * The threads embedded engines run on, and what they share. Opening an engine in a new thread costs the
 * thread and its imports, the compilation of PGlite's WebAssembly, and PostgreSQL's start. Two of these are
 * paid once here rather than at every open:
 *
 * - the WebAssembly module is compiled once per process and passed to every engine's thread; V8 shares a
 *   module's compiled code between the threads that instantiate it, so the functions one engine compiled (and
 *   optimized) on first use are compiled for the next one too;
 * - while some database rests (closed for idleness), one spare thread waits with its modules imported, so that
 *   the first call that opens a resting database does not wait for a thread to start.
 */

import { trimSoon } from "../lib/rest_gc.ts";

const WORKER = new URL("./pglite_worker.ts", import.meta.url);

let compiled: Promise<WebAssembly.Module | undefined> | undefined;

/**
 * PGlite's WebAssembly module, compiled once for the process. Undefined when the package's files are not on
 * disk where this process can read them: each engine then compiles its own (as PGlite does by itself).
 */
export function engineModule(): Promise<WebAssembly.Module | undefined> {
  compiled ??= (async () => {
    const entry = new URL(import.meta.resolve("@electric-sql/pglite"));
    if (entry.protocol !== "file:") return undefined;
    try {
      return await WebAssembly.compile(await Deno.readFile(new URL("./pglite.wasm", entry)));
    } catch {
      return undefined;
    }
  })();
  return compiled;
}

/** Databases at rest now: while there is one, a spare thread is kept. */
let resting = 0;
let spare: Worker | null = null;

function spawn(): Worker {
  return new Worker(WORKER, { type: "module" });
}

/** A thread for a new engine: the spare when there is one (its modules are loaded), else a new one. */
export function engineThread(): Worker {
  const thread = spare ?? spawn();
  spare = null;
  return thread;
}

/** Starts a spare thread when some database rests and there is none (after an open, so as not to slow it). */
export function keepSpare(): void {
  if (resting > 0 && !spare) spare = spawn();
}

/** A database went to rest: its reopen will take the spare thread. */
export function rested(): void {
  resting++;
  keepSpare();
  // Much of what the ended engine's thread allocated stays in malloc's arenas until trimmed (lib/rest_gc.ts).
  trimSoon();
}

/** A resting database opened again or closed for good: with none left resting, the spare thread ends. */
export function woke(): void {
  resting = Math.max(0, resting - 1);
  if (resting > 0) return keepSpare();
  spare?.terminate();
  spare = null;
}

/** Spare threads waiting now (0 or 1). */
export function spareThreads(): number {
  return spare ? 1 : 0;
}
