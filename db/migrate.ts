import type { Db } from "./driver.ts";

/** The two sets of numbered migrations: the control database and every project database. */
export type MigrationSet = "control" | "project";

/** A migration file: `0001_name.sql`. */
export interface Migration {
  name: string;
  sql: string;
}

/** Reads the numbered `.sql` files of a set, in order. */
export async function readMigrations(set: MigrationSet): Promise<Migration[]> {
  const dir = new URL(`./migrations/${set}/`, import.meta.url);
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && /^\d{4}_[a-z0-9_]+\.sql$/.test(entry.name)) names.push(entry.name);
  }
  names.sort();
  return await Promise.all(
    names.map(async (name) => ({ name, sql: await Deno.readTextFile(new URL(name, dir)) })),
  );
}

// A fixed advisory lock key so that several instances starting together apply each migration once.
const LOCK_KEY = 7_302_215_001;

/**
 * Applies the migrations of `set` that `db` has not seen, all in one transaction under an advisory lock: they
 * land together or not at all, and instances starting together apply each once.
 * Running it again does nothing: applied names are recorded in `platform.migrations`.
 */
export async function migrate(db: Db, migrations: Migration[]): Promise<string[]> {
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    await tx.query("select pg_advisory_xact_lock($1)", [LOCK_KEY]);
    await tx.exec(`
      create schema if not exists platform;
      revoke all on schema platform from public;
      create table if not exists platform.migrations (
        name text primary key,
        applied_at timestamptz not null default now()
      );`);
    const done = new Set(
      (await tx.query<{ name: string }>("select name from platform.migrations")).map((r) => r.name),
    );
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      await tx.exec(m.sql);
      await tx.query("insert into platform.migrations (name) values ($1)", [m.name]);
      applied.push(m.name);
    }
  });
  return applied;
}
