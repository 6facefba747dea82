/**
 * Builds one self-contained ES module from a function's source and the packages it imports, with Deno's own
 * bundler, in a child process that can harm nothing: no environment of the platform's, read access to the
 * module's own directory and the package cache only, network to the registries only, a heap cap, a time limit
 * and a cap on what it may write back. See docs/functions.md ("Imports").
 */
import { join } from "node:path";
import type { BuilderIssue, BuilderReport } from "./report.ts";
import { PackageCache } from "./package_cache.ts";

/** Limits and sources of the bundler, in one typed object. */
export interface BundlerOptions {
  /** Directory of the shared package cache (Deno's cache, the build directories). */
  cacheDir: string;
  /** Size the package cache is pruned back to, least recently used first (bytes). */
  cacheMaxBytes: number;
  /** The npm registry (URL). */
  npmRegistry: string;
  /** Hosts `https:` and `jsr:` imports may come from (`host` or `host:port`). */
  importHosts: string[];
  /** Largest bundle (bytes). */
  maxBytes: number;
  /** A build is stopped past this (ms). */
  timeoutMs: number;
}

/** A function's module with its packages in it. */
export interface Bundle {
  /** The bundle: one ES module whose only imports are `node:` built-ins. */
  code: string;
  /** Each import as written (`npm:zod@^3`) with the version it resolved to; https: imports with their hash. */
  dependencies: Record<string, string>;
}

/** A build that failed for a reason of the function's own (an import, a package, the size): a 400 at deploy. */
export class BundleError extends Error {
  constructor(readonly issues: BuilderIssue[]) {
    super(issues.map((i) => (i.specifier ? `import "${i.specifier}": ${i.cause}` : i.cause)).join("; "));
    this.name = "BundleError";
  }
}

const BUILDER = new URL("./builder.ts", import.meta.url).pathname;
const BUILDER_HEAP_MB = 512;
// Room for the report line before the bundle's bytes.
const REPORT_BYTES = 64 * 1024;

/** A deno.lock (v5) as the builder leaves it: the parts read here. */
interface Lock {
  specifiers?: Record<string, string>;
  npm?: Record<string, { scripts?: boolean }>;
  remote?: Record<string, string>;
}

/**
 * Bundler builds functions one at a time per instance (a build is short; the package cache is then never
 * pruned under a build that reads it).
 */
export class Bundler {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly packages: PackageCache;
  private readonly denoDir: string;

  constructor(private readonly options: BundlerOptions) {
    this.denoDir = join(options.cacheDir, "deno");
    this.packages = new PackageCache(this.denoDir, options.cacheMaxBytes);
  }

  /** Bundles `source`; throws {@linkcode BundleError} for the function's own faults, Error for the platform's. */
  build(source: string): Promise<Bundle> {
    const run = this.queue.then(() => this.buildNow(source));
    this.queue = run.then(() => this.packages.prune(), () => this.packages.prune()).catch(() => {});
    return run;
  }

  private async buildNow(source: string): Promise<Bundle> {
    await Deno.mkdir(join(this.options.cacheDir, "work"), { recursive: true, mode: 0o700 });
    await Deno.mkdir(join(this.denoDir, "npm"), { recursive: true });
    await Deno.mkdir(join(this.denoDir, "remote"), { recursive: true });
    const work = await Deno.makeTempDir({ dir: join(this.options.cacheDir, "work") });
    try {
      const entry = join(work, "main.ts");
      await Deno.writeTextFile(entry, source);
      const { report, bytes } = await this.spawn(work, entry);
      if (!report.ok) throw new BundleError(report.issues);
      const lock = JSON.parse(await Deno.readTextFile(join(work, "deno.lock")).catch(() => "{}")) as Lock;
      const scripted = Object.entries(lock.npm ?? {}).filter(([, p]) => p.scripts).map(([id]) => id);
      if (scripted.length > 0) {
        throw new BundleError(scripted.map((id) => ({
          specifier: null,
          cause:
            `package "${id}" needs install scripts (a native add-on or a build step), which the platform ` +
            "does not run",
        })));
      }
      await this.packages.touch(Object.keys(lock.npm ?? {}));
      return { code: this.scrub(new TextDecoder().decode(bytes), work), dependencies: dependencies(lock) };
    } finally {
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  }

  /**
   * The bundle carries no path of this machine (a package may keep its file's path as a string). The bundler
   * gives CommonJS packages a `require` made from the module's URL, which for a function is a data: URL that
   * createRequire refuses: it gets a file URL instead, under which `require` finds Node's built-ins and no file.
   */
  private scrub(code: string, work: string): string {
    return code.replaceAll(join(this.denoDir, "npm"), "/npm").replaceAll(this.denoDir, "/deno")
      .replaceAll(work, "/function")
      .replaceAll(
        "__deno_internal_createRequire(import.meta.url)",
        '__deno_internal_createRequire("file:///function.js")',
      );
  }

  private async spawn(work: string, entry: string): Promise<{ report: BuilderReport; bytes: Uint8Array }> {
    const registry = new URL(this.options.npmRegistry);
    const hosts = this.options.importHosts;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        "--no-config",
        "--node-modules-dir=none",
        `--lock=${join(work, "deno.lock")}`,
        "--unstable-bundle",
        `--v8-flags=--max-old-space-size=${BUILDER_HEAP_MB}`,
        `--allow-read=${work},${join(this.denoDir, "npm")},${join(this.denoDir, "remote")}`,
        `--allow-net=${[registry.host, ...hosts].join(",")}`,
        ...(hosts.length ? [`--allow-import=${hosts.join(",")}`] : []),
        BUILDER,
        entry,
        registry.href,
      ],
      cwd: work,
      clearEnv: true,
      env: {
        DENO_DIR: this.denoDir,
        NPM_CONFIG_REGISTRY: registry.href,
        HOME: work,
        NO_COLOR: "1",
        DENO_NO_UPDATE_CHECK: "1",
        ...networkEnv(),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, this.options.timeoutMs);
    const limit = this.options.maxBytes + REPORT_BYTES;
    const [out, err, status] = await Promise.all([
      readCapped(child.stdout, limit, () => child.kill("SIGKILL")),
      readCapped(child.stderr, 16 * 1024, () => {}),
      child.status,
    ]).finally(() => clearTimeout(timer));
    const mb = Math.round(this.options.maxBytes / 1048576);
    const tooLarge = new BundleError([{ specifier: null, cause: `the bundle is larger than ${mb} MB` }]);
    if (out.over) throw tooLarge;
    if (timedOut) {
      throw new BundleError([{
        specifier: null,
        cause: `resolving its imports took longer than ${this.options.timeoutMs / 1000} s`,
      }]);
    }
    const newline = out.bytes.indexOf(10);
    if (!status.success || newline < 0) {
      // The platform's fault, not the function's: the cause goes to the platform's log only.
      const text = new TextDecoder().decode(err.bytes).replaceAll(work, "<work>").slice(-2000);
      throw new Error(`Function bundler failed (exit ${status.code}): ${text}`);
    }
    const report = JSON.parse(new TextDecoder().decode(out.bytes.subarray(0, newline))) as BuilderReport;
    const bytes = out.bytes.subarray(newline + 1);
    if (report.ok && bytes.byteLength > this.options.maxBytes) throw tooLarge;
    return { report, bytes };
  }
}

/** The resolved version of each import the function names (and of those of its jsr: packages). */
function dependencies(lock: Lock): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [spec, version] of Object.entries(lock.specifiers ?? {})) out[spec] = version;
  for (const [url, hash] of Object.entries(lock.remote ?? {})) out[url] = `sha256-${hash}`;
  return out;
}

// The platform's own settings for reaching the network (proxies, certificate authorities): a build reaches the
// registry as the platform does.
const NETWORK_ENV = [
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
];

/** The platform's network settings, from its environment. */
function networkEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of NETWORK_ENV) {
    const value = Deno.env.get(name);
    if (value) env[name] = value;
  }
  return env;
}

/** Reads a stream up to `limit` bytes; past it, calls `onOver` and stops. */
async function readCapped(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  onOver: () => void,
): Promise<{ bytes: Uint8Array; over: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let over = false;
  for await (const chunk of stream) {
    if (over) continue; // drained, not kept
    size += chunk.byteLength;
    if (size > limit) {
      over = true;
      onOver();
      continue;
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(over ? 0 : size);
  let at = 0;
  for (const c of chunks) {
    if (over) break;
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { bytes, over };
}
