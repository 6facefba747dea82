import { concatBytes } from "../../lib/encoding.ts";

/** Bytes of one WebAssembly memory page. */
export const PAGE_BYTES = 65536;

function readLeb(bytes: Uint8Array, offset: number): [value: number, next: number] {
  let result = 0;
  let shift = 0;
  let pos = offset;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined) throw new Error("Truncated module");
    result += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [result, pos];
    shift += 7;
    if (shift > 35) throw new Error("Malformed LEB128 number");
  }
}

function leb(value: number): number[] {
  const out: number[] = [];
  let v = value;
  do {
    let byte = v & 0x7f;
    v = Math.floor(v / 128);
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

/**
 * Returns a copy of a module whose memories may not grow past `maxPages`: the memory section's limits get a
 * maximum (lowered when larger), so `memory.grow` fails inside the module instead of eating the host.
 * Throws when a memory's minimum is already above the cap, or when the module imports its memory or uses a
 * shared or 64-bit memory (not supported).
 */
export function capMemory(module: Uint8Array, maxPages: number): Uint8Array {
  if (
    module.byteLength < 8 || module[0] !== 0 || module[1] !== 0x61 || module[2] !== 0x73 || module[3] !== 0x6d
  ) {
    throw new Error("Not a WebAssembly module");
  }
  const parts: Uint8Array[] = [module.subarray(0, 8)];
  let offset = 8;
  while (offset < module.byteLength) {
    const id = module[offset]!;
    const [size, bodyStart] = readLeb(module, offset + 1);
    const bodyEnd = bodyStart + size;
    if (bodyEnd > module.byteLength) throw new Error("Truncated module");
    if (id === 2) assertNoMemoryImport(module.subarray(bodyStart, bodyEnd));
    if (id === 5) {
      const body = rewriteMemories(module.subarray(bodyStart, bodyEnd), maxPages);
      parts.push(new Uint8Array([5, ...leb(body.length), ...body]));
    } else {
      parts.push(module.subarray(offset, bodyEnd));
    }
    offset = bodyEnd;
  }
  return concatBytes(parts);
}

function rewriteMemories(body: Uint8Array, maxPages: number): number[] {
  let [count, pos] = readLeb(body, 0);
  const out = [...leb(count)];
  while (count-- > 0) {
    const flags = body[pos++];
    if (flags !== 0 && flags !== 1) throw new Error("Shared and 64-bit memories are not supported");
    let min: number;
    [min, pos] = readLeb(body, pos);
    let max = maxPages;
    if (flags === 1) {
      let declared: number;
      [declared, pos] = readLeb(body, pos);
      max = Math.min(declared, maxPages);
    }
    if (min > maxPages) {
      throw new Error(`Module needs ${min * PAGE_BYTES / 1048576} MiB of memory, above memory_mb`);
    }
    out.push(1, ...leb(min), ...leb(max));
  }
  return out;
}

function assertNoMemoryImport(body: Uint8Array): void {
  const decoder = new TextDecoder();
  let [count, pos] = readLeb(body, 0);
  while (count-- > 0) {
    for (let i = 0; i < 2; i++) {
      let len: number;
      [len, pos] = readLeb(body, pos);
      decoder.decode(body.subarray(pos, pos + len));
      pos += len;
    }
    const kind = body[pos++];
    if (kind === 0) [, pos] = readLeb(body, pos); // function: type index
    else if (kind === 1) { // table: reftype + limits
      pos++;
      const flags = body[pos++]!;
      [, pos] = readLeb(body, pos);
      if (flags & 1) [, pos] = readLeb(body, pos);
    } else if (kind === 2) throw new Error("Modules that import their memory are not supported");
    else if (kind === 3) pos += 2; // global: valtype + mutability
    else throw new Error("Unsupported import kind");
  }
}
