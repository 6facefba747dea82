/**
 * An embedded engine loads only the libraries it ships. A project's SQL is a superuser inside its own engine
 * (`reset role`), and a superuser may `LOAD` any file, or declare a `language c` function in one: it can write a
 * file of its own (`lo_export`, `COPY TO`) and load it. PostgreSQL's loader is Emscripten's, which compiles the
 * file as a WebAssembly side module, evaluates the JavaScript it carries (EM_JS) in the engine's thread and gives
 * its code the file system calls of the engine: a way out of the database into the thread, its permissions and
 * the host's files. So from before PostgreSQL starts (a start reads the project's data directory, whose settings
 * can name libraries to preload), every WebAssembly compile in its thread is checked: a binary is compiled only
 * when it is byte for byte one of the libraries found in the engine's install tree then (PGlite's own and the
 * extensions placed there), or a module with no code (the trampolines Emscripten builds to put a JavaScript
 * function in a table).
 */
import { createHash } from "node:crypto";

/** SHA-256 digests of the libraries the engine may load. */
const allowed = new Set<string>();
let locked = false;
let installed = false;

function digest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The bytes a compile was handed, or null for what is not bytes. */
function bytesOf(source: unknown): Uint8Array | null {
  if (source instanceof Uint8Array) return source;
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || source instanceof SharedArrayBuffer) return new Uint8Array(source);
  return null;
}

/** A LEB128 unsigned integer at `at`: its value and the offset after it. */
function leb(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (at >= bytes.length || shift > 28) throw new Error("malformed");
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return [value, at];
    shift += 7;
  }
}

/** True for a module of type, import and export sections only: it holds no code, no data, no custom section. */
export function codeless(bytes: Uint8Array): boolean {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    return false;
  }
  try {
    for (let at = 8; at < bytes.length;) {
      const id = bytes[at]!;
      if (id !== 1 && id !== 2 && id !== 7) return false;
      const [size, body] = leb(bytes, at + 1);
      at = body + size;
      if (at > bytes.length) return false;
    }
    return true;
  } catch {
    return false;
  }
}

function check(source: unknown): void {
  if (!locked) return;
  const bytes = bytesOf(source);
  // A compiled module comes from a checked compile, or from the platform (PGlite's own, compiled once).
  if (bytes === null ? source instanceof WebAssembly.Module : codeless(bytes) || allowed.has(digest(bytes))) {
    return;
  }
  throw new Error("the embedded database loads only the libraries it ships");
}

/** Checks every compile of this thread once locked (PGlite's own compile, before, is not checked). */
export function guardLibraries(): void {
  if (installed) return;
  installed = true;
  const wasm = WebAssembly as unknown as Record<string, unknown>;
  const Module = WebAssembly.Module;
  // A proxy keeps `instanceof WebAssembly.Module` true for every module, whichever way it was made.
  wasm.Module = new Proxy(Module, {
    construct(target, args, newTarget) {
      check(args[0]);
      return Reflect.construct(target, args, newTarget);
    },
  });
  for (const name of ["compile", "instantiate"] as const) {
    const original = WebAssembly[name] as (source: unknown, ...rest: unknown[]) => Promise<unknown>;
    wasm[name] = (source: unknown, ...rest: unknown[]) => {
      try {
        check(source);
      } catch (err) {
        return Promise.reject(err);
      }
      return original.call(WebAssembly, source, ...rest);
    };
  }
  // A stream is read to its bytes first, then checked and compiled as bytes.
  const instantiate = wasm.instantiate as (source: unknown, imports?: unknown) => Promise<unknown>;
  const compile = wasm.compile as (source: unknown) => Promise<unknown>;
  const bytesOfStream = async (source: unknown) => await (await (source as Promise<Response>)).arrayBuffer();
  wasm.compileStreaming = async (source: unknown) => await compile(await bytesOfStream(source));
  wasm.instantiateStreaming = async (source: unknown, imports?: unknown) =>
    await instantiate(await bytesOfStream(source), imports);
}

/** Adds binaries the process trusts (a package's own, read from its files) to what may compile once locked. */
export function allowBinaries(binaries: Iterable<Uint8Array>): void {
  for (const bytes of binaries) allowed.add(digest(bytes));
}

/** The libraries found in the engine's install tree, read before any SQL ran; from now on, only these load. */
export function lockLibraries(libraries: Iterable<Uint8Array>): void {
  for (const bytes of libraries) allowed.add(digest(bytes));
  locked = true;
}
