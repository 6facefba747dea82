import type { JWK } from "jose";
import { type Queryable, quoteIdent } from "../../db/driver.ts";
import type { KeyKind } from "./projects.ts";

/** A row of `platform.projects` without its private key. */
export interface ProjectRow {
  ref: string;
  name: string;
  created_at: Date | string;
  jwt_kid: string;
  jwt_public_jwk: JWK;
}

/** A new project's row: its private key arrives encrypted, its public key as a JWK. */
export interface NewProject {
  ref: string;
  name: string;
  jwtKid: string;
  jwtPrivateKey: string;
  jwtPublicJwk: JWK;
}

const PROJECT_COLUMNS = "ref, name, created_at, jwt_kid, jwt_public_jwk";

/** The SQL of projects and their API keys in the control database, and the role switch of owner SQL. */
export const projectStore = {
  async find(db: Queryable, ref: string): Promise<ProjectRow | null> {
    const [row] = await db.query<ProjectRow>(
      `select ${PROJECT_COLUMNS} from platform.projects where ref = $1`,
      [ref],
    );
    return row ?? null;
  },

  /** Every project, oldest first. */
  async list(db: Queryable): Promise<ProjectRow[]> {
    return await db.query<ProjectRow>(
      `select ${PROJECT_COLUMNS} from platform.projects order by created_at, ref`,
    );
  },

  /** Inserts a project; a taken ref fails with SQLSTATE 23505. */
  async insert(tx: Queryable, p: NewProject): Promise<void> {
    await tx.query(
      `insert into platform.projects (ref, name, jwt_kid, jwt_private_key, jwt_public_jwk)
       values ($1, $2, $3, $4, $5::text::jsonb)`,
      [p.ref, p.name, p.jwtKid, p.jwtPrivateKey, JSON.stringify(p.jwtPublicJwk)],
    );
  },

  /** Deletes a project (its keys go with it). */
  async delete(db: Queryable, ref: string): Promise<void> {
    await db.query("delete from platform.projects where ref = $1", [ref]);
  },

  /** The encrypted private key that signs the project's user tokens. */
  async privateKey(db: Queryable, ref: string): Promise<string | null> {
    const [row] = await db.query<{ jwt_private_key: string }>(
      "select jwt_private_key from platform.projects where ref = $1",
      [ref],
    );
    return row?.jwt_private_key ?? null;
  },

  async insertKey(tx: Queryable, ref: string, kind: KeyKind, keyHash: string, keyEncrypted: string) {
    await tx.query(
      "insert into platform.api_keys (project_ref, kind, key_hash, key_encrypted) values ($1, $2, $3, $4)",
      [ref, kind, keyHash, keyEncrypted],
    );
  },

  async revokeKeys(tx: Queryable, ref: string, kind: KeyKind): Promise<void> {
    await tx.query(
      "update platform.api_keys set revoked_at = now() where project_ref = $1 and kind = $2 and revoked_at is null",
      [ref, kind],
    );
  },

  /** The live keys of a project (encrypted), oldest first. */
  async liveKeys(db: Queryable, ref: string): Promise<{ kind: KeyKind; key_encrypted: string }[]> {
    return await db.query<{ kind: KeyKind; key_encrypted: string }>(
      `select kind, key_encrypted from platform.api_keys
       where project_ref = $1 and revoked_at is null order by created_at`,
      [ref],
    );
  },

  /** Every live key (encrypted) with its project and kind. */
  async allLiveKeys(db: Queryable): Promise<{ project_ref: string; kind: KeyKind; key_encrypted: string }[]> {
    return await db.query<{ project_ref: string; kind: KeyKind; key_encrypted: string }>(
      "select project_ref, kind, key_encrypted from platform.api_keys where revoked_at is null",
    );
  },

  /** The project and kind of a live key's hash. */
  async keyOwner(db: Queryable, keyHash: string): Promise<{ project_ref: string; kind: KeyKind } | null> {
    const [row] = await db.query<{ project_ref: string; kind: KeyKind }>(
      "select project_ref, kind from platform.api_keys where key_hash = $1 and revoked_at is null",
      [keyHash],
    );
    return row ?? null;
  },

  /** Drops the transaction's privileges to `role` (owner SQL runs so). */
  async setLocalRole(tx: Queryable, role: string): Promise<void> {
    await tx.query(`set local role ${quoteIdent(role)}`);
  },
};
