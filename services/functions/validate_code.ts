import { capMemory, PAGE_BYTES } from "../../runtime/wasm/memory_cap.ts";
import { decodeBase64 } from "../../lib/encoding.ts";
import { errors } from "../../lib/errors.ts";

/** Function names: a lowercase letter, then up to 62 lowercase letters, digits, `_` or `-`. */
export const FUNCTION_NAME = /^[a-z][a-z0-9_-]{0,62}$/;
/** Names reserved for the platform's own routes under `/v1/functions/`: refused at deploy. */
export const RESERVED_NAMES = new Set(["jobs", "cron", "alerts", "metrics"]);

/** Refuses a reserved function name with 400. */
export function checkName(name: string): void {
  if (RESERVED_NAMES.has(name)) {
    throw errors.validation(`Function name "${name}" is reserved by the platform's own routes`);
  }
}

/**
 * Checks that `deno` code is one parseable ES module (TypeScript allowed) whose imports the platform can take;
 * 400 with the parser's message or the import refused. Returns its imports (static, and dynamic ones written
 * as a literal).
 */
export async function checkDenoCode(name: string, code: string): Promise<string[]> {
  // The parser loads on first use: a process that never takes a deploy does not hold it.
  const { parse } = await import("@babel/parser");
  let ast;
  try {
    ast = parse(code, { sourceType: "module", plugins: ["typescript"], errorRecovery: false });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw errors.validation(`Cannot deploy function "${name}": code does not parse: ${message}`);
  }
  const found: Found = { static: [], dynamic: [] };
  importsOf(ast.program, found);
  for (const specifier of found.static) {
    const why = refusedImport(specifier);
    if (why) throw errors.validation(`Cannot deploy function "${name}": import "${specifier}" ${why}`);
  }
  // A dynamic import runs when the code does: one the bundler cannot take fails then, within the permissions.
  return [...new Set([...found.static, ...found.dynamic.filter((s) => refusedImport(s) === null)])];
}

/** True when a function with these imports needs a bundle: it imports more than Node's built-ins. */
export const needsBundle = (imports: string[]): boolean => imports.some((s) => !s.startsWith("node:"));

/** Why an import cannot be taken, or null: a function is one module and imports packages by registry. */
function refusedImport(specifier: string): string | null {
  if (/^(npm|jsr|node):./.test(specifier) || /^https:\/\/./.test(specifier)) return null;
  if (/^(\.{0,2}\/|file:)/.test(specifier)) {
    return "names a file: a function is one module, so it can import packages (npm:, jsr:, https:) and node: " +
      "built-ins only";
  }
  if (/^[a-z@][\w.@/-]*$/i.test(specifier) && !specifier.includes(":")) {
    return `is a bare name: write "npm:${specifier}" (or jsr:) to say where it comes from`;
  }
  return "is not supported: import packages by npm:, jsr: or https:, and node: built-ins";
}

/** Module specifiers found in a module: of declarations, and of `import("literal")`. */
interface Found {
  static: string[];
  dynamic: string[];
}

/** Collects the module specifiers of import and export-from declarations and of `import("literal")`. */
function importsOf(node: unknown, out: Found): void {
  if (Array.isArray(node)) {
    for (const n of node) importsOf(n, out);
    return;
  }
  if (!node || typeof node !== "object") return;
  const n = node as Record<string, unknown> & { type?: string };
  const literal = (v: unknown, into = out.static) => {
    const lit = v as { type?: string; value?: unknown } | null;
    if (lit?.type === "StringLiteral" && typeof lit.value === "string") into.push(lit.value);
  };
  if (
    n.type === "ImportDeclaration" || n.type === "ExportAllDeclaration" || n.type === "ExportNamedDeclaration"
  ) {
    literal(n.source);
  } else if (n.type === "ImportExpression") literal(n.source, out.dynamic);
  else if (n.type === "CallExpression" && (n.callee as { type?: string })?.type === "Import") {
    literal((n.arguments as unknown[])[0], out.dynamic);
  }
  for (const [key, value] of Object.entries(n)) {
    if (key !== "loc" && key !== "start" && key !== "end" && value && typeof value === "object") {
      importsOf(value, out);
    }
  }
}

/**
 * Checks that `wasm` code is base64 of a WASI command module the runtime can run: it compiles, exports
 * `_start` and its memory, imports only `wasi_snapshot_preview1`, and its memory fits `memory_mb`.
 */
export function checkWasmCode(name: string, code: string, memoryMb: number): void {
  const fail = (why: string) => errors.validation(`Cannot deploy function "${name}": ${why}`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(code) || code.length % 4 !== 0) {
    throw fail("code must be the base64 of a compiled WebAssembly module");
  }
  let module: WebAssembly.Module;
  try {
    const bytes = decodeBase64(code);
    capMemory(bytes, Math.floor(memoryMb * 1048576 / PAGE_BYTES));
    module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  } catch (err) {
    throw fail(`module is not valid: ${err instanceof Error ? err.message : String(err)}`);
  }
  const exports = WebAssembly.Module.exports(module);
  if (!exports.some((e) => e.name === "_start" && e.kind === "function")) {
    throw fail("module must be a WASI command exporting _start");
  }
  if (!exports.some((e) => e.name === "memory" && e.kind === "memory")) {
    throw fail("module must export its memory");
  }
  const foreign = WebAssembly.Module.imports(module).find((i) => i.module !== "wasi_snapshot_preview1");
  if (foreign) {
    throw fail(`module imports "${foreign.module}.${foreign.name}", which the runtime does not provide`);
  }
}
