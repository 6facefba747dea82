import type { Databases } from "../../db/databases.ts";
import { type FunctionRow, functionStore, type FunctionWrite } from "./store.ts";
import type { FunctionSpec } from "../../runtime/supervisor.ts";
import { type Cipher, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import {
  DEFAULT_PERMISSIONS,
  mergePermissions,
  type Permissions,
  type PermissionsPatch,
  storedPermissions,
} from "./permissions.ts";
import { checkDenoCode, checkName, checkWasmCode } from "./validate_code.ts";

/** A function as the API returns it (docs/functions.md), env_vars decrypted. */
export interface FunctionObject {
  id: string;
  project_id: string;
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  env_vars: Record<string, string>;
  permissions: Permissions;
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

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

/**
 * FunctionService stores functions in each project's database (upsert on name, env_vars encrypted at rest
 * with AES-GCM, permissions merged and bounded, code checked at deploy) and serves the cached, decrypted
 * view that invoke needs.
 */
export class FunctionService {
  /** Counts the writes that forgot cached functions: a load that overlapped one does not cache its row. */
  private writes = 0;
  private readonly cache = new TtlCache<string, LoadedFunction | null>({
    ttlMs: CACHE_MS,
    maxEntries: 10_000,
  });

  constructor(
    private readonly dbs: Databases,
    private readonly cipher: Cipher,
    private readonly hooks: FunctionHooks,
  ) {}

  private async view(ref: string, row: FunctionRow): Promise<FunctionObject> {
    return {
      id: row.id,
      project_id: ref,
      name: row.name,
      runtime: row.runtime,
      code: row.code,
      code_hash: row.code_hash,
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

  private check(name: string, runtime: "deno" | "wasm", code: string, permissions: Permissions): void {
    if (runtime === "deno") checkDenoCode(name, code);
    else checkWasmCode(name, code, permissions.memory_mb);
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
    const result = await db.transaction(async (tx) => {
      const existing = await functionStore.find(tx, input.name, true).then((r) =>
        r?.name === input.name ? r : null
      );
      const permissions = mergePermissions(
        existing ? storedPermissions(existing.permissions) : DEFAULT_PERMISSIONS,
        input.permissions,
      );
      this.check(input.name, input.runtime, input.code, permissions);
      const write: FunctionWrite = {
        name: input.name,
        runtime: input.runtime,
        code: input.code,
        code_hash: codeHash,
        env_vars: newEnv ?? existing?.env_vars ?? await this.encryptEnv({}),
        permissions,
        is_active: input.is_active ?? existing?.is_active ?? true,
      };
      if (existing) return { row: await functionStore.update(tx, existing.id, write), created: false };
      const row = await functionStore.insert(tx, write);
      if (!row) throw errors.conflict(`Function "${input.name}" is being deployed concurrently: try again`);
      return { row, created: true };
    });
    return { fn: await this.written(ref, result.row), created: result.created };
  }

  /** Updates code, env_vars, is_active or permissions (merged field by field). */
  async update(ref: string, nameOrId: string, input: UpdateInput): Promise<FunctionObject> {
    const db = await this.dbs.project(ref);
    const row = await db.transaction(async (tx) => {
      const current = await functionStore.find(tx, nameOrId, true);
      if (!current) throw errors.notFound(`Function "${nameOrId}" does not exist`);
      const permissions = mergePermissions(
        storedPermissions(current.permissions),
        input.permissions,
      );
      const code = input.code ?? current.code;
      if (input.code !== undefined || input.permissions?.memory_mb !== undefined) {
        this.check(current.name, current.runtime, code, permissions);
      }
      return await functionStore.update(tx, current.id, {
        name: current.name,
        runtime: current.runtime,
        code,
        code_hash: input.code !== undefined ? await sha256Hex(code) : current.code_hash,
        env_vars: input.env_vars ? await this.encryptEnv(input.env_vars) : current.env_vars,
        permissions,
        is_active: input.is_active ?? current.is_active,
      });
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
      JSON.stringify([ref, fn.id, fn.runtime, fn.code_hash, fn.permissions, fn.env_vars]),
    );
    return {
      fn,
      spec: {
        tenant: ref,
        functionId: fn.id,
        versionKey,
        name: fn.name,
        kind: fn.runtime,
        code: fn.code,
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
