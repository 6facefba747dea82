import { exportJWK, exportPKCS8, generateKeyPair, importPKCS8, type JWK } from "jose";
import type { Databases } from "../../db/databases.ts";
import { sqlState } from "../../db/driver.ts";
import { type Cipher, randomHex, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import { runOwnerSql } from "./sql.ts";
import { type ProjectRow, projectStore } from "./store.ts";

/** The kinds of project key: `public` gives role anon, `secret` gives role service_role. */
export type KeyKind = "public" | "secret";

/** A project as the platform serves it. */
export interface Project {
  ref: string;
  name: string;
  created_at: string;
  jwt_kid: string;
  jwt_public_jwk: JWK;
}

/** The current keys of a project, in clear. */
export interface ProjectKeys {
  public_key: string;
  secret_key: string;
}

/** What a key resolves to. */
export interface KeyOwner {
  ref: string;
  kind: KeyKind;
}

/** Project refs: lowercase letters, digits and `-`, 1 to 40 characters. */
export const PROJECT_REF = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;

const KEY_PREFIX: Record<KeyKind, string> = { public: "pk", secret: "sk" };
// Lookups are cached briefly: a revoked key stops working everywhere within this time (at once locally).
const CACHE_MS = 10_000;

function toProject(row: ProjectRow): Project {
  return {
    ref: row.ref,
    name: row.name,
    created_at: new Date(row.created_at).toISOString(),
    jwt_kid: row.jwt_kid,
    jwt_public_jwk: row.jwt_public_jwk,
  };
}

/** Makes a new key of a kind for a project: `pk_<ref>_<128 random bits>`. */
export function newKey(ref: string, kind: KeyKind): string {
  return `${KEY_PREFIX[kind]}_${ref}_${randomHex(16)}`;
}

/**
 * ProjectService creates, finds, deletes projects and manages their API keys and JWT signing keys.
 * Keys are looked up by SHA-256 hash and kept encrypted so that the console can show them.
 */
export class ProjectService {
  private readonly projects: TtlCache<string, Project | null>;
  private readonly keyOwners: TtlCache<string, KeyOwner | null>;
  private readonly signingKeys = new Map<string, Promise<CryptoKey>>();
  /**
   * Every project, kept on PGlite, where this process is the only writer of the control database: the workers
   * list projects every few seconds, and that must not keep the control database open (it closes when idle).
   */
  private everyProject: { list: Promise<Project[]>; generation: number } | null = null;
  /** Counts the changes of projects and keys made here (see {@linkcode preload}). */
  private changes = 0;

  constructor(private readonly dbs: Databases, private readonly cipher: Cipher) {
    // On PGlite this process is the only writer of the control database, and it forgets what it changes: a
    // project or a key's owner found stays until then, so that a request after a long rest resolves its caller
    // without opening the control database (it closes when idle); what was not found stays CACHE_MS. Elsewhere
    // another instance's change shows within CACHE_MS.
    const ttlMs = dbs.kind === "pglite" ? Infinity : CACHE_MS;
    this.projects = new TtlCache({ ttlMs, maxEntries: 10_000 });
    this.keyOwners = new TtlCache({ ttlMs, maxEntries: 100_000 });
  }

  /** The project `ref` or null when the cache knows the answer; undefined when it does not. */
  cached(ref: string): Project | null | undefined {
    return this.projects.get(ref);
  }

  /** The project `ref`, or null. Cached briefly. */
  async find(ref: string): Promise<Project | null> {
    const cached = this.projects.get(ref);
    if (cached !== undefined) return cached;
    const row = await projectStore.find(this.dbs.control, ref);
    const project = row ? toProject(row) : null;
    this.projects.set(ref, project, project ? undefined : CACHE_MS); // an unknown ref: briefly
    return project;
  }

  /** The project `ref`; 404 PROJECT_NOT_FOUND when it does not exist. */
  async get(ref: string): Promise<Project> {
    const project = PROJECT_REF.test(ref) ? await this.find(ref) : null;
    if (!project) throw errors.projectNotFound(ref);
    return project;
  }

  /**
   * A request of a caller admitted to project `ref` has begun: its embedded database, if it rests, starts
   * opening now, beside what the request reads from the control database first (its settings), not after it.
   * Only for an admitted caller: a request refused for its key must not open, or keep open, anything.
   */
  admitted(ref: string): void {
    this.dbs.warm(ref);
  }

  /** Every project, oldest first. */
  list(): Promise<Project[]> {
    // A list read across a creation or deletion was read under an older generation: it is read again.
    const generation = this.dbs.projectsGeneration;
    if (this.everyProject?.generation === generation) return this.everyProject.list;
    const listed = projectStore.list(this.dbs.control).then((rows) => rows.map(toProject));
    if (this.dbs.kind !== "pglite") return listed;
    const kept = { list: listed, generation };
    this.everyProject = kept;
    listed.catch(() => {
      if (this.everyProject === kept) this.everyProject = null;
    });
    return listed;
  }

  /**
   * On PGlite, reads every project and the owner of every live key into what is kept (bounded as ever), so that
   * requests after the start resolve their caller without the control database, which may then rest. Kept only
   * if no project or key changed meanwhile (a key rotated or a project deleted while it read must not come back);
   * a key that cannot be decrypted is left to its first lookup. Answers every project.
   */
  async preload(): Promise<Project[]> {
    const all = await this.list();
    if (this.dbs.kind !== "pglite") return all;
    const before = this.changes;
    const owners: [string, KeyOwner][] = [];
    for (const key of await projectStore.allLiveKeys(this.dbs.control)) {
      const clear = await this.cipher.decrypt(key.key_encrypted).catch(() => null);
      if (clear !== null) owners.push([clear, { ref: key.project_ref, kind: key.kind }]);
    }
    if (this.changes !== before) return all;
    for (const project of all) this.projects.set(project.ref, project);
    for (const [key, owner] of owners) this.keyOwners.set(key, owner);
    return all;
  }

  /**
   * Creates a project: its row, its keys (given or new), its signing key pair, then its database.
   * 409 CONFLICT when the ref is taken.
   */
  async create(input: { ref: string; name?: string; keys?: Partial<ProjectKeys> }): Promise<Project> {
    if (!PROJECT_REF.test(input.ref)) {
      throw errors.validation(`Project ref "${input.ref}" must be 1-40 lowercase letters, digits or "-"`);
    }
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const kid = randomHex(8);
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
    const pkcs8 = await this.cipher.encrypt(await exportPKCS8(privateKey));
    const keys = {
      public: input.keys?.public_key ?? newKey(input.ref, "public"),
      secret: input.keys?.secret_key ?? newKey(input.ref, "secret"),
    };
    try {
      await this.dbs.control.transaction(async (tx) => {
        await projectStore.insert(tx, {
          ref: input.ref,
          name: input.name ?? input.ref,
          jwtKid: kid,
          jwtPrivateKey: pkcs8,
          jwtPublicJwk: jwk,
        });
        for (const kind of ["public", "secret"] as const) {
          const encrypted = await this.cipher.encrypt(keys[kind]);
          await projectStore.insertKey(tx, input.ref, kind, await sha256Hex(keys[kind]), encrypted);
        }
      });
    } catch (err) {
      if (sqlState(err) === "23505") throw errors.conflict(`Project "${input.ref}" already exists`);
      throw err;
    } finally {
      this.dbs.projectsChanged(input.ref);
    }
    this.projects.delete(input.ref);
    // A key given to the new project may have been looked up, and found unknown, before.
    this.keyOwners.deleteWhere((owner) => owner === null);
    try {
      await this.dbs.createProject(input.ref);
    } catch (err) {
      await projectStore.delete(this.dbs.control, input.ref).finally(() =>
        this.dbs.projectsChanged(input.ref)
      );
      throw errors.unavailable(`Cannot create the database of project "${input.ref}"`, err);
    }
    return await this.get(input.ref);
  }

  /** Deletes a project, its keys and its database. */
  async delete(ref: string): Promise<void> {
    await this.get(ref);
    await projectStore.delete(this.dbs.control, ref).finally(() => this.dbs.projectsChanged(ref));
    this.forget(ref);
    await this.dbs.dropProject(ref);
  }

  /** The current keys of a project, decrypted. */
  async keys(ref: string): Promise<ProjectKeys> {
    const rows = await projectStore.liveKeys(this.dbs.control, ref);
    const out: Partial<ProjectKeys> = {};
    for (const row of rows) {
      out[row.kind === "public" ? "public_key" : "secret_key"] = await this.cipher.decrypt(row.key_encrypted);
    }
    if (!out.public_key || !out.secret_key) throw errors.internal(new Error(`Project ${ref} lacks a key`));
    return out as ProjectKeys;
  }

  /** Replaces the key of one kind; the old key stops working at once on this instance. */
  async rotateKey(ref: string, kind: KeyKind): Promise<ProjectKeys> {
    await this.get(ref);
    const key = newKey(ref, kind);
    await this.dbs.control.transaction(async (tx) => {
      await projectStore.revokeKeys(tx, ref, kind);
      await projectStore.insertKey(tx, ref, kind, await sha256Hex(key), await this.cipher.encrypt(key));
    });
    this.changes++;
    this.keyOwners.deleteWhere((owner) => owner?.ref === ref);
    return await this.keys(ref);
  }

  /** The owner of `key` or null when the cache knows the answer; undefined when it does not. */
  cachedKey(key: string): KeyOwner | null | undefined {
    return this.keyOwners.get(key);
  }

  /** The project and kind of a live key, or null. Cached briefly, negative answers too. */
  async lookupKey(key: string): Promise<KeyOwner | null> {
    const cached = this.keyOwners.get(key);
    if (cached !== undefined) return cached;
    const row = await projectStore.keyOwner(this.dbs.control, await sha256Hex(key));
    const owner = row ? { ref: row.project_ref, kind: row.kind } : null;
    // An unknown key is kept briefly even on PGlite: anyone may send many, and none of them may stay.
    this.keyOwners.set(key, owner, owner ? undefined : CACHE_MS);
    return owner;
  }

  /** The private ES256 key that signs the project's user tokens. */
  signingKey(ref: string): Promise<CryptoKey> {
    let key = this.signingKeys.get(ref);
    if (!key) {
      key = (async () => {
        const encrypted = await projectStore.privateKey(this.dbs.control, ref);
        if (encrypted === null) throw errors.projectNotFound(ref);
        return await importPKCS8(await this.cipher.decrypt(encrypted), "ES256");
      })();
      this.signingKeys.set(ref, key);
      key.catch(() => this.signingKeys.delete(ref));
    }
    return key;
  }

  /** Runs the owner's SQL in the project database (`POST /v1/sql`); see {@linkcode runOwnerSql}. */
  async runSql(ref: string, query: string, params?: unknown[]): Promise<Record<string, unknown>[]> {
    return await runOwnerSql(await this.dbs.ownerSession(ref), query, params);
  }

  private forget(ref: string): void {
    this.changes++;
    this.projects.delete(ref);
    this.signingKeys.delete(ref);
    this.keyOwners.deleteWhere((owner) => owner?.ref === ref);
  }
}
