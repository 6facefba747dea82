/**
 * The bundler's own process (`deno run runtime/bundle/builder.ts <entry> <npm registry>`, started by bundle.ts): runs Deno's
 * bundler on one function's module under the permissions its parent gives it (read: the module's own directory
 * and the package cache; net: the registries, for the probes below; nothing else) and writes to stdout one JSON
 * line, then the bundle's bytes when it succeeded. It runs no code of the function or of its packages: the
 * bundler only reads and rewrites them, and Deno runs no npm lifecycle script without a node_modules directory.
 *
 * When an import cannot be loaded, the bundler's message often hides why (a refused connection reads as
 * "Could not find constraint"): the builder then asks the registry once itself, to name the cause.
 */
import type { BuilderIssue, BuilderReport } from "./report.ts";

/** The part of Deno's unstable bundle API the builder uses (`--unstable-bundle`). */
interface BundleApi {
  (options: {
    entrypoints: string[];
    write: false;
    platform: "deno";
    format: "esm";
    minify: boolean;
  }): Promise<{
    success: boolean;
    errors: {
      text: string;
      location: { file: string; line: number; column: number; length: number } | null;
    }[];
    outputFiles?: { contents: Uint8Array }[];
  }>;
}

const PROBE_MS = 5_000;
const [entry, registryArg] = Deno.args;
if (!entry || !registryArg) throw new Error("usage: builder.ts <entry> <npm registry>");
const registry = registryArg.replace(/\/?$/, "/");

/** The import the bundler pointed at in the function's own module: the quoted text at its location. */
function specifierAt(source: string, loc: { line: number; column: number; length: number } | null) {
  if (!loc) return null;
  const text = source.split("\n")[loc.line - 1]?.slice(loc.column, loc.column + loc.length) ?? "";
  const m = /^["'`](.*)["'`]$/.exec(text);
  return m ? m[1]! : null;
}

/** Asks `url` once; the cause of a failure in words (no stack, no address of this machine). */
async function probe(url: string): Promise<{ status: number; body: unknown } | string> {
  try {
    const res = await fetch(url, {
      signal: AbortSignal.timeout(PROBE_MS),
      headers: { accept: "application/json" },
    });
    const body = res.ok ? await res.json().catch(() => null) : (await res.body?.cancel(), null);
    return { status: res.status, body };
  } catch (err) {
    if (err instanceof Deno.errors.NotCapable) return `its host is not one the platform imports from`;
    const why = err instanceof DOMException && err.name === "TimeoutError" ? "timed out" : "failed";
    return `${new URL(url).host} is not reachable from the platform (the connection ${why})`;
  }
}

/** Why `name@range` (an npm constraint the bundler could not meet) failed: the package, a version or the network. */
async function npmCause(name: string, range: string): Promise<string> {
  const got = await probe(`${registry}${name.replace("/", "%2f")}`);
  if (typeof got === "string") return `the npm registry: ${got}`;
  if (got.status === 404) return `package "${name}" does not exist in the npm registry`;
  if (got.status !== 200) return `the npm registry answered ${got.status}`;
  const latest = (got.body as { "dist-tags"?: { latest?: string } } | null)?.["dist-tags"]?.latest;
  return `no published version of "${name}" matches "${range || "latest"}"` +
    (latest ? ` (latest: ${latest})` : "");
}

/** Why a jsr: or https: module could not be loaded. */
async function remoteCause(specifier: string): Promise<string> {
  let url = specifier;
  const jsr = /^jsr:\/?(@[^/]+\/[^@/]+)?/.exec(specifier);
  if (jsr) {
    if (!jsr[1]) return "it is not a valid jsr: specifier";
    url = `https://jsr.io/${jsr[1]}/meta.json`;
  }
  const got = await probe(url);
  if (typeof got === "string") return got;
  return got.status === 200 ? "it could not be loaded" : `${new URL(url).host} answered ${got.status}`;
}

async function explain(text: string, specifier: string | null): Promise<BuilderIssue> {
  const constraint = /Could not find constraint '((?:@[^/']+\/)?[^@']+)@?([^']*)'/.exec(text);
  if (constraint) {
    const [, name, range] = constraint;
    return { specifier: specifier ?? `npm:${name}@${range}`, cause: await npmCause(name!, range!) };
  }
  const unloadable = /Do not know how to load path: deno:(\S+)/.exec(text);
  if (unloadable) return { specifier: unloadable[1]!, cause: await remoteCause(unloadable[1]!) };
  const denied = /Requires (?:import|read) access to "([^"]+)"/.exec(text);
  if (denied) {
    return {
      specifier,
      cause: text.startsWith("Requires import")
        ? `host "${denied[1]}" is not one the platform imports from`
        : "it names a file, and a function is one module: import packages by npm:, jsr: or https:",
    };
  }
  if (/No loader is configured for "\.node" files/.test(text)) {
    return { specifier, cause: "it needs a native add-on (.node), which functions cannot load" };
  }
  return { specifier, cause: text.split("\n")[0]!.slice(0, 300) };
}

async function main(): Promise<{ report: BuilderReport; bytes?: Uint8Array }> {
  const bundle = (Deno as unknown as { bundle: BundleApi }).bundle;
  let result;
  try {
    result = await bundle({
      entrypoints: [entry!],
      write: false,
      platform: "deno",
      format: "esm",
      minify: true,
    });
  } catch (err) {
    // The bundler could not start: Deno fetches it from the npm registry on first use.
    const text = err instanceof Error ? err.message.split("\n")[0]! : String(err);
    const cause = /^Failed loading (\S+) for package/.test(text)
      ? `the npm registry is not reachable from the platform (${text})`
      : `the bundler could not run: ${text}`;
    return {
      report: { ok: false, issues: [{ specifier: null, cause }] },
    };
  }
  const bytes = result.outputFiles?.[0]?.contents;
  if (result.success && bytes) return { report: { ok: true, bytes: bytes.byteLength }, bytes };
  const source = await Deno.readTextFile(entry!);
  const issues: BuilderIssue[] = [];
  for (const e of result.errors.slice(0, 5)) {
    // Locations are relative to the working directory, which is the module's own.
    const own = e.location?.file === "main.ts";
    issues.push(await explain(e.text, own ? specifierAt(source, e.location) : null));
  }
  return { report: { ok: false, issues } };
}

async function writeAll(bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.byteLength;) done += await Deno.stdout.write(bytes.subarray(done));
}

const { report, bytes } = await main();
await writeAll(new TextEncoder().encode(JSON.stringify(report) + "\n"));
if (bytes) await writeAll(bytes);
