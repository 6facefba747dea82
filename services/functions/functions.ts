import type { Databases } from "../../db/databases.ts";
import type { Queryable } from "../../db/driver.ts";
import { type FunctionRow, functionStore, type FunctionWrite } from "./store.ts";
import type { FunctionSpec } from "../../runtime/supervisor.ts";
import { type Cipher, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { jsonSize, TtlCache } from "../../lib/ttl_cache.ts";
import {
  DEFAULT_PERMISSIONS,
  mergePermissions,
  type Permissions,
  type PermissionsPatch,
  storedPermissions,
} from "./permissions.ts";
import { checkDenoCode, checkName, checkWasmCode, needsBundle } from "./validate_code.ts";
import type { BundleSource, StoredBundle } from "./bundles.ts";

/** A function as the API returns it (docs/functions.md), env_vars decrypted. */
export interface FunctionObject {
  id: string;
  project_id: string;
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  /** SHA-256 of the bundle the function runs, when it imports packages; null when `code` runs as is. */
  bundle_hash: string | null;
  /** Each import as written, with the version it resolved to at deploy. */
  dependencies: Record<string, string>;
  env_vars: Record<string, string>;
  permissions: Permissions;
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

/** The bundle fields a write stores: a new bundle, the one the function had, or none. */
interface BundleChoice {
  bundle_hash: string | null;
  dependencies: Record<string, string>;
  /** A bundle built by this write, to store with it. */
  built?: StoredBundle;
}

const NO_BUNDLE: BundleChoice = { bundle_hash: null, dependencies: {} };

/** The body of POST /v1/functions: an upsert on name. */
export interface DeployInput {
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  env_vars?: Record<string, string>;
  permissions?: PermissionsPatch;
  is_active?: boolean;
}

/** The body of PATCH /v1/functions/{name}. */
export interface UpdateInput {
  code?: string;
  env_vars?: Record<string, string>;
  is_active?: boolean;
  permissions?: PermissionsPatch;
}

/** A deployed function ready to run: its object and its runtime spec. */
export interface LoadedFunction {
  fn: FunctionObject;
  spec: FunctionSpec;
}

/** Hooks the service calls after a write, so the runtime can prewarm or retire hosts. */
export interface FunctionHooks {
  deployed(spec: FunctionSpec): void;
  removed(functionId: string): void;
}

// Lookups on the invoke path are cached; writes on this instance invalidate at once, others within this time.
const CACHE_MS = 5_000;
// Code, bundles and env_vars are the users' sizes: the cache is bounded in bytes too (FUNCTIONS_CODE_CACHE_MB).
const CACHE_BYTES = 64 * 1048576;

/** Approximate bytes of a loaded function: its row as JSON (code, env) and a bundle when it runs one. */
const loadedSize = (v: LoadedFunction | null) =>
  v === null ? 4 : jsonSize(v.fn) + (v.spec.code === v.fn.code ? 0 : v.spec.code.length);

/**
 * FunctionService stores functions in each project's database (upsert on name, env_vars encrypted at rest
 * with AES-GCM, permissions merged and bounded, code checked at deploy) and serves the cached, decrypted
 * view that invoke needs.
 */
export class FunctionService {
  /** Counts the writes that forgot cached functions: a load that overlapped one does not cache its row. */
  private writes = 0;
  private readonly cache: TtlCache<string, LoadedFunction | null>;

  constructor(
    private readonly dbs: Databases,
    private readonly cipher: Cipher,
    private readonly hooks: FunctionHooks,
    private readonly bundles: BundleSource,
    cacheMaxBytes = CACHE_BYTES,
  ) {
    this.cache = new TtlCache({
      ttlMs: CACHE_MS,
      maxEntries: 10_000,
      maxBytes: cacheMaxBytes,
      sizeOf: loadedSize,
    });
  }

  /** Approximate bytes of the loaded functions cached (for tests and metrics). */
  get cachedBytes(): number {
    return this.cache.bytes;
  }

  private async view(ref: string, row: FunctionRow): Promise<FunctionObject> {
    return {
      id: row.id,
      project_id: ref,
      name: row.name,
      runtime: row.runtime,
      code: row.code,
      code_hash: row.code_hash,
      bundle_hash: row.bundle_hash ?? null,
      dependencies: row.dependencies ?? {},
      env_vars: await this.decryptEnv(row.env_vars),
      permissions: storedPermissions(row.permissions),
      is_active: row.is_active,
      created_at: new Date(row.created_at).toISOString(),
      updated_at: new Date(row.updated_at).toISOString(),
    };
  }

  private async decryptEnv(sealed: string): Promise<Record<string, string>> {
    return JSON.parse(await this.cipher.decrypt(sealed));
  }

  private async encryptEnv(env: Record<string, string>): Promise<string> {
    return await this.cipher.encrypt(JSON.stringify(env));
  }

  private async check(
    name: string,
    runtime: "deno" | "wasm",
    code: string,
    permissions: Permissions,
  ): Promise<void> {
    if (runtime === "deno") await checkDenoCode(name, code);
    else checkWasmCode(name, code, permissions.memory_mb);
  }

  /**
   * The bundle new code needs, built before the write's transaction (a build takes a while: no row is locked
   * meanwhile). Code without package imports runs as is; code the function already runs keeps its bundle.
   */
  private async bundleFor(
    name: string,
    runtime: "deno" | "wasm",
    code: string,
    codeHash: string,
    current: FunctionRow | null,
  ): Promise<BundleChoice> {
    if (runtime !== "deno" || !needsBundle(await checkDenoCode(name, code))) return NO_BUNDLE;
    if (current?.runtime === "deno" && current.code_hash === codeHash && current.bundle_hash) {
      return { bundle_hash: current.bundle_hash, dependencies: current.dependencies ?? {} };
    }
    const built = await this.bundles.build(name, code);
    return { bundle_hash: built.hash, dependencies: built.dependencies, built };
  }

  /** Stores a bundle this write built, before the row that points at it. */
  private async storeBundle(tx: Queryable, choice: BundleChoice): Promise<void> {
    if (choice.built) await functionStore.putBundle(tx, choice.built.hash, choice.built.code);
  }

  private async require(ref: string, nameOrId: string): Promise<FunctionRow> {
    const db = await this.dbs.project(ref);
    const row = await functionStore.find(db, nameOrId);
    if (!row) throw errors.notFound(`Function "${nameOrId}" does not exist`);
    return row;
  }

  /** Every function of a project. */
  async list(ref: string): Promise<FunctionObject[]> {
    const db = await this.dbs.project(ref);
    return await Promise.all((await functionStore.list(db)).map((row) => this.view(ref, row)));
  }

  /** One function by name, or by id when no function has that name; 404 otherwise. */
  async get(ref: string, nameOrId: string): Promise<FunctionObject> {
    return await this.view(ref, await this.require(ref, nameOrId));
  }

  /**
   * Deploys: a new name creates the function; an existing name gets the new code and
   * runtime, its env_vars replaced only when sent, its permissions merged with what is sent.
   */
  async deploy(ref: string, input: DeployInput): Promise<{ fn: FunctionObject; created: boolean }> {
    checkName(input.name);
    const db = await this.dbs.project(ref);
    const codeHash = await sha256Hex(input.code);
    const newEnv = input.env_vars ? await this.encryptEnv(input.env_vars) : undefined;
    const before = await functionStore.find(db, input.name).then((r) => r?.name === input.name ? r : null);
    const bundle = await this.bundleFor(input.name, input.runtime, input.code, codeHash, before);
    const result = await db.transaction(async (tx) => {
      const existing = await functionStore.find(tx, input.name, true).then((r) =>
        r?.name === input.name ? r : null
      );
      const permissions = mergePermissions(
        existing ? storedPermissions(existing.permissions) : DEFAULT_PERMISSIONS,
        input.permissions,
      );
      await this.check(input.name, input.runtime, input.code, permissions);
      const write: FunctionWrite = {
        name: input.name,
        runtime: input.runtime,
        code: input.code,
        code_hash: codeHash,
        env_vars: newEnv ?? existing?.env_vars ?? await this.encryptEnv({}),
        permissions,
        is_active: input.is_active ?? existing?.is_active ?? true,
        bundle_hash: bundle.bundle_hash,
        dependencies: bundle.dependencies,
      };
      await this.storeBundle(tx, bundle);
      if (existing) {
        const row = await functionStore.update(tx, existing.id, write);
        await functionStore.dropUnusedBundles(tx);
        return { row, created: false };
      }
      const row = await functionStore.insert(tx, write);
      if (!row) throw errors.conflict(`Function "${input.name}" is being deployed concurrently: try again`);
      return { row, created: true };
    });
    return { fn: await this.written(ref, result.row), created: result.created };
  }

  /** Updates code, env_vars, is_active or permissions (merged field by field). */
  async update(ref: string, nameOrId: string, input: UpdateInput): Promise<FunctionObject> {
    const db = await this.dbs.project(ref);
    let bundle: BundleChoice | null = null;
    if (input.code !== undefined) {
      const before = await functionStore.find(db, nameOrId);
      if (!before) throw errors.notFound(`Function "${nameOrId}" does not exist`);
      bundle = await this.bundleFor(
        before.name,
        before.runtime,
        input.code,
        await sha256Hex(input.code),
        before,
      );
    }
    const row = await db.transaction(async (tx) => {
      const current = await functionStore.find(tx, nameOrId, true);
      if (!current) throw errors.notFound(`Function "${nameOrId}" does not exist`);
      const permissions = mergePermissions(
        storedPermissions(current.permissions),
        input.permissions,
      );
      const code = input.code ?? current.code;
      if (input.code !== undefined || input.permissions?.memory_mb !== undefined) {
        await this.check(current.name, current.runtime, code, permissions);
      }
      const kept = { bundle_hash: current.bundle_hash ?? null, dependencies: current.dependencies ?? {} };
      if (bundle) await this.storeBundle(tx, bundle);
      const updated = await functionStore.update(tx, current.id, {
        name: current.name,
        runtime: current.runtime,
        code,
        code_hash: input.code !== undefined ? await sha256Hex(code) : current.code_hash,
        env_vars: input.env_vars ? await this.encryptEnv(input.env_vars) : current.env_vars,
        permissions,
        is_active: input.is_active ?? current.is_active,
        bundle_hash: (bundle ?? kept).bundle_hash,
        dependencies: (bundle ?? kept).dependencies,
      });
      if (bundle) await functionStore.dropUnusedBundles(tx);
      return updated;
    });
    return await this.written(ref, row);
  }

  /** Deletes a function; 404 when it does not exist. */
  async delete(ref: string, nameOrId: string): Promise<void> {
    const row = await this.require(ref, nameOrId);
    await functionStore.delete(await this.dbs.project(ref), row.id);
    this.forget(ref, row);
    this.hooks.removed(row.id);
  }

  /** The variables of a function, decrypted, as `{key, value}` pairs sorted by key. */
  async getEnv(ref: string, nameOrId: string): Promise<{ key: string; value: string }[]> {
    const env = await this.decryptEnv((await this.require(ref, nameOrId)).env_vars);
    return Object.keys(env).sort().map((key) => ({ key, value: env[key]! }));
  }

  /** Replaces the whole set of variables, encrypted at rest. */
  async putEnv(ref: string, nameOrId: string, vars: { key: string; value: string }[]): Promise<void> {
    const seen = new Set<string>();
    for (const { key } of vars) {
      if (seen.has(key)) throw errors.validation(`Invalid body: vars: key "${key}" appears twice`);
      seen.add(key);
    }
    await this.update(ref, nameOrId, { env_vars: Object.fromEntries(vars.map((v) => [v.key, v.value])) });
  }

  /**
   * The active function `name` of a project with its runtime spec, or null (cached briefly). Synchronous on a
   * cache hit: an invoke awaits nothing it need not.
   */
  loadActive(ref: string, name: string): LoadedFunction | null | Promise<LoadedFunction | null> {
    const key = `${ref}\u0000${name}`;
    const cached = this.cache.get(key);
    return cached !== undefined ? cached : this.loadUncached(ref, name, key);
  }

  private async loadUncached(ref: string, name: string, key: string): Promise<LoadedFunction | null> {
    const writes = this.writes;
    const db = await this.dbs.project(ref);
    const row = await functionStore.find(db, name);
    const loaded = row && row.is_active ? await this.load(ref, row) : null;
    // A write while this load ran made its row stale: caching it would undo the write's own entry.
    if (writes === this.writes) this.cache.set(key, loaded);
    return loaded;
  }

  private async load(ref: string, row: FunctionRow): Promise<LoadedFunction> {
    const fn = await this.view(ref, row);
    const versionKey = await sha256Hex(
      JSON.stringify([ref, fn.id, fn.runtime, fn.code_hash, fn.bundle_hash, fn.permissions, fn.env_vars]),
    );
    const hash = fn.bundle_hash;
    // A function that imports packages runs its bundle, stored at deploy: nothing is resolved again here.
    const code = hash
      ? await this.bundles.code(hash, async () => functionStore.bundle(await this.dbs.project(ref), hash))
      : fn.code;
    return {
      fn,
      spec: {
        tenant: ref,
        functionId: fn.id,
        versionKey,
        name: fn.name,
        kind: fn.runtime,
        code,
        bundled: hash !== null,
        env: fn.env_vars,
        allowNet: fn.permissions.allow_net,
        memoryMb: fn.permissions.memory_mb,
        timeoutSecs: fn.permissions.timeout_secs,
        cpuMs: fn.permissions.cpu_ms,
      },
    };
  }

  private async written(ref: string, row: FunctionRow): Promise<FunctionObject> {
    this.forget(ref, row);
    const loaded = await this.load(ref, row);
    if (row.is_active) {
      // The first invoke usually follows at once: it finds the function loaded.
      this.cache.set(`${ref}\u0000${row.name}`, loaded);
      this.hooks.deployed(loaded.spec);
    } else this.hooks.removed(row.id);
    return loaded.fn;
  }

  private forget(ref: string, row: FunctionRow): void {
    this.writes++;
    this.cache.deleteWhere((value, key) => key === `${ref}\u0000${row.name}` || value?.fn.id === row.id);
    this.cache.delete(`${ref}\u0000${row.id}`);
  }
}
