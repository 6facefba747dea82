import { assert } from "../tests/assert.ts";
import { codeless } from "./pglite_library_guard.ts";

const MAGIC = [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];

Deno.test("library guard: a module is codeless only with type, import and export sections", () => {
  // Emscripten's trampoline for addFunction: type (i32) -> i32, import e.f, export f.
  const trampoline = [
    ...MAGIC,
    1,
    6,
    1,
    0x60,
    1,
    0x7f,
    1,
    0x7f,
    2,
    7,
    1,
    1,
    101,
    1,
    102,
    0,
    0,
    7,
    5,
    1,
    1,
    102,
    0,
    0,
  ];
  assert(codeless(new Uint8Array(trampoline)));
  assert(codeless(new Uint8Array(MAGIC)));
  // A custom section (dylink.0 makes a side module), a function and a code section, a start section.
  assert(!codeless(new Uint8Array([...MAGIC, 0, 9, 8, ...new TextEncoder().encode("dylink.0")])));
  assert(!codeless(new Uint8Array([...MAGIC, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 4, 1, 2, 0, 0x0b])));
  assert(!codeless(new Uint8Array([...MAGIC, 8, 1, 0])));
  // A section that runs past the end, an endless LEB128, not a WebAssembly module.
  assert(!codeless(new Uint8Array([...MAGIC, 1, 50, 1])));
  assert(!codeless(new Uint8Array([...MAGIC, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80])));
  assert(!codeless(new TextEncoder().encode("not wasm at all")));
});
