import { join } from "node:path";
import { type Bundle, BundleError, Bundler, type BundlerOptions } from "../../runtime/bundle/bundle.ts";
import { sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { log } from "../../lib/log.ts";

/** A built bundle as a function stores it. */
export interface StoredBundle {
  hash: string;
  code: string;
  dependencies: Record<string, string>;
}

/** Builds bundles at deploy and serves their bytes by hash. */
export interface BundleSource {
  /** Builds the bundle of `code`; 400 VALIDATION_ERROR naming the import and the cause when it cannot. */
  build(name: string, code: string): Promise<StoredBundle>;
  /** The bundle `hash`: from the disk cache, else from `load` (the database), which then fills the cache. */
  code(hash: string, load: () => Promise<string | null>): Promise<string>;
}

/**
 * FunctionBundles turns the bundler's outcome into the platform's: a 400 that names the import and the cause
 * for a fault of the function's own, a bare 500 for the platform's; and keeps built bundles on disk by hash
 * (`<FUNCTIONS_PACKAGE_CACHE_DIR>/bundles`), so that a host starts from a file read rather than a query.
 */
export class FunctionBundles implements BundleSource {
  private readonly bundler: Bundler;
  private readonly dir: string;

  constructor(options: BundlerOptions) {
    this.bundler = new Bundler(options);
    this.dir = join(options.cacheDir, "bundles");
  }

  async build(name: string, code: string): Promise<StoredBundle> {
    let built: Bundle;
    try {
      built = await this.bundler.build(code);
    } catch (err) {
      if (err instanceof BundleError) {
        throw errors.validation(`Cannot deploy function "${name}": ${err.message}`);
      }
      log.error("function bundle failed", { function: name, error: String(err) });
      throw err;
    }
    const hash = await sha256Hex(built.code);
    await this.save(hash, built.code);
    return { hash, code: built.code, dependencies: built.dependencies };
  }

  async code(hash: string, load: () => Promise<string | null>): Promise<string> {
    const path = join(this.dir, `${hash}.js`);
    const cached = await Deno.readTextFile(path).catch(() => null);
    if (cached !== null && await sha256Hex(cached) === hash) return cached;
    const stored = await load();
    if (stored === null) throw new Error(`Function bundle ${hash} is missing`);
    await this.save(hash, stored);
    return stored;
  }

  /** Writes a bundle to the disk cache (whole or not at all: written aside, then renamed). */
  private async save(hash: string, code: string): Promise<void> {
    try {
      await Deno.mkdir(this.dir, { recursive: true });
      const path = join(this.dir, `${hash}.js`);
      const aside = `${path}.${crypto.randomUUID()}.tmp`;
      await Deno.writeTextFile(aside, code);
      await Deno.rename(aside, path);
    } catch (err) {
      log.warn("function bundle not cached on disk", { error: String(err) });
    }
  }
}
