// Rows are JSON text cast in SQL (`$n::text::jsonb`) so that both drivers store the same value.
import type { Queryable } from "./driver.ts";

/** A row of `platform.functions` (env_vars still encrypted). */
export interface FunctionRow {
  id: string;
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  env_vars: string;
  permissions: { allow_net: string[]; memory_mb: number; timeout_secs: number };
  is_active: boolean;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS =
  "id, name, runtime, code, code_hash, env_vars, permissions, is_active, created_at, updated_at";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The fields written by a deploy or an update. */
export interface FunctionWrite {
  name: string;
  runtime: "deno" | "wasm";
  code: string;
  code_hash: string;
  env_vars: string;
  permissions: FunctionRow["permissions"];
  is_active: boolean;
}

/** Queries of `platform.functions` in a project database. */
export const functionQueries = {
  /** Every function, by name. */
  async list(db: Queryable): Promise<FunctionRow[]> {
    return await db.query<FunctionRow>(`select ${COLUMNS} from platform.functions order by name`);
  },

  /** The function named `ref`, or else the one whose id is `ref`. `lock` takes a row lock. */
  async find(db: Queryable, ref: string, lock = false): Promise<FunctionRow | null> {
    if (ref.includes("\u0000")) return null; // PostgreSQL text cannot hold a NUL: no function has one
    const forUpdate = lock ? " for update" : "";
    const [byName] = await db.query<FunctionRow>(
      `select ${COLUMNS} from platform.functions where name = $1${forUpdate}`,
      [ref],
    );
    if (byName || !UUID.test(ref)) return byName ?? null;
    const [byId] = await db.query<FunctionRow>(
      `select ${COLUMNS} from platform.functions where id = $1${forUpdate}`,
      [ref],
    );
    return byId ?? null;
  },

  /** Inserts a function; null when the name was taken meanwhile. */
  async insert(db: Queryable, f: FunctionWrite): Promise<FunctionRow | null> {
    const [row] = await db.query<FunctionRow>(
      `insert into platform.functions (name, runtime, code, code_hash, env_vars, permissions, is_active)
       values ($1, $2, $3, $4, $5, $6::text::jsonb, $7) on conflict (name) do nothing returning ${COLUMNS}`,
      [f.name, f.runtime, f.code, f.code_hash, f.env_vars, JSON.stringify(f.permissions), f.is_active],
    );
    return row ?? null;
  },

  /** Replaces every field of the function `id`. */
  async update(db: Queryable, id: string, f: FunctionWrite): Promise<FunctionRow> {
    const [row] = await db.query<FunctionRow>(
      `update platform.functions set name = $2, runtime = $3, code = $4, code_hash = $5, env_vars = $6,
         permissions = $7::text::jsonb, is_active = $8, updated_at = now()
       where id = $1 returning ${COLUMNS}`,
      [id, f.name, f.runtime, f.code, f.code_hash, f.env_vars, JSON.stringify(f.permissions), f.is_active],
    );
    return row!;
  },

  /** Deletes the function `id`. */
  async delete(db: Queryable, id: string): Promise<void> {
    await db.query("delete from platform.functions where id = $1", [id]);
  },
};
