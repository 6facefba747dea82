import { join } from "node:path";
import type { OwnerSession } from "./databases.ts";
import { quoteIdent } from "./driver.ts";

/** A user's migration file from their `migrations/` folder. */
export interface UserMigration {
  name: string;
  sql: string;
  checksum: string;
}

/** Where user migrations are applied: a project database directly, or a running platform over HTTP. */
export interface MigrationTarget {
  /** Names and checksums already applied. */
  applied(): Promise<Map<string, string>>;
  /** Applies one migration and records it, in one transaction. */
  apply(migration: UserMigration): Promise<void>;
}

/** File names a migration may have: `20240101_create_todos.sql`, `0001-init.sql`… */
export const MIGRATION_FILE = /^[0-9A-Za-z][0-9A-Za-z_.-]*\.sql$/;

// Kept in the owner's own schema `migrations`: the owner may write it, the data API does not expose it.
const TRACKING_SQL = `
create schema if not exists migrations;
create table if not exists migrations.schema_migrations (
  name text primary key,
  checksum text not null,
  applied_at timestamptz not null default now()
)`;

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Reads the `.sql` files of `dir` in name order. */
export async function readUserMigrations(dir: string): Promise<UserMigration[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".sql")) {
      if (!MIGRATION_FILE.test(entry.name)) {
        throw new Error(`Migration file name "${entry.name}" is not allowed`);
      }
      names.push(entry.name);
    }
  }
  names.sort();
  return await Promise.all(names.map(async (name) => {
    const sql = await Deno.readTextFile(join(dir, name));
    return { name, sql, checksum: await sha256(sql) };
  }));
}

/**
 * Applies migrations straight to a project database (the platform must not hold a PGlite directory), on the
 * owner's session as `POST /v1/sql` does: on PostgreSQL the owner's own login, never the platform's.
 */
export function databaseTarget(owner: OwnerSession): MigrationTarget {
  const db = owner.db;
  // As the project owner, so that what a migration creates is the owner's.
  const asOwner = `set local role ${quoteIdent(owner.role)};\n`;
  return {
    async applied() {
      await db.transaction((tx) => tx.exec(asOwner + TRACKING_SQL));
      const rows = await db.query<{ name: string; checksum: string }>(
        "select name, checksum from migrations.schema_migrations",
      );
      return new Map(rows.map((r) => [r.name, r.checksum]));
    },
    async apply(m) {
      await db.transaction(async (tx) => {
        await tx.exec(asOwner);
        await tx.exec(m.sql);
        await tx.query("insert into migrations.schema_migrations (name, checksum) values ($1, $2)", [
          m.name,
          m.checksum,
        ]);
        await tx.query("select pg_notify('platform_schema', 'reload')");
      }, { after: owner.reset });
    },
  };
}

/** Applies migrations through `POST /v1/sql` of a running platform with the project's secret key. */
export function httpTarget(
  baseUrl: string,
  secretKey: string,
  fetchFn: (req: Request) => Promise<Response> = fetch,
): MigrationTarget {
  const sql = async (query: string): Promise<Record<string, unknown>[]> => {
    const res = await fetchFn(
      new Request(new URL("/v1/sql", baseUrl), {
        method: "POST",
        headers: { apikey: secretKey, "content-type": "application/json" },
        body: JSON.stringify({ query }),
      }),
    );
    const body = await res.json();
    if (res.status !== 200) {
      throw new Error(`SQL failed (${res.status} ${body.error?.code}): ${body.error?.message}`);
    }
    return body.data;
  };
  return {
    async applied() {
      await sql(TRACKING_SQL);
      const rows = await sql("select name, checksum from migrations.schema_migrations");
      return new Map(rows.map((r) => [String(r.name), String(r.checksum)]));
    },
    async apply(m) {
      // Name and checksum are checked above (file-name pattern, hex), so they are safe as literals; the
      // platform runs the whole script in one transaction.
      if (!MIGRATION_FILE.test(m.name) || !/^[0-9a-f]{64}$/.test(m.checksum)) {
        throw new Error("Bad migration");
      }
      await sql(
        `${m.sql}\n;\ninsert into migrations.schema_migrations (name, checksum) values ('${m.name}', '${m.checksum}')`,
      );
    },
  };
}

/**
 * Applies the migrations not yet applied, in name order, each in its own transaction. An applied file whose
 * content changed stops everything: migrations are append-only. Returns the names applied now.
 */
export async function applyUserMigrations(
  target: MigrationTarget,
  migrations: UserMigration[],
): Promise<string[]> {
  const done = await target.applied();
  for (const m of migrations) {
    const previous = done.get(m.name);
    if (previous !== undefined && previous !== m.checksum) {
      throw new Error(`Migration "${m.name}" changed after it was applied: add a new migration instead`);
    }
  }
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.name)) continue;
    try {
      await target.apply(m);
    } catch (err) {
      throw new Error(`Migration "${m.name}" failed: ${(err as Error).message}`);
    }
    applied.push(m.name);
  }
  return applied;
}
