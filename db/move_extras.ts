/**
 * What a move copies besides tables and rows: indexes the platform builds on its own tables at run time (one
 * vector index per AI namespace), the policies a project's owner writes on the platform's tables
 * (`realtime.messages`, which authorizes private realtime channels) and the contents of a project's
 * materialized views.
 */
import type { PGlite } from "@electric-sql/pglite";
import { type Db, quoteIdent } from "./driver.ts";

/**
 * Builds on the server the indexes of the platform's schemas that its migrations do not make (the AI gateway's
 * per-namespace vector indexes). One the server cannot build (no pgvector there) is skipped: the gateway then
 * searches by exact scan, as it does on any server without pgvector.
 */
export async function copyIndexes(pg: PGlite, db: Db, schemas: string[]): Promise<string[]> {
  if (schemas.length === 0) return [];
  const { rows } = await pg.query<{ schema: string; name: string; def: string }>(
    `select n.nspname as schema, c.relname as name, pg_catalog.pg_get_indexdef(i.indexrelid) as def
       from pg_catalog.pg_index i
       join pg_catalog.pg_class c on c.oid = i.indexrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any($1::text[])
        and not exists (select 1 from pg_catalog.pg_constraint k where k.conindid = i.indexrelid)
      order by 1, 2`,
    [schemas],
  );
  const skipped: string[] = [];
  for (const index of rows) {
    const [found] = await db.query<{ oid: string | null }>("select pg_catalog.to_regclass($1)::text as oid", [
      `${quoteIdent(index.schema)}.${quoteIdent(index.name)}`,
    ]);
    if (found?.oid) continue;
    try {
      await db.exec(index.def);
    } catch {
      skipped.push(`${index.schema}.${index.name}`);
    }
  }
  return skipped;
}

/** Fills on the server the materialized views of `schemas` that hold rows on the embedded side. */
export async function refreshViews(pg: PGlite, db: Db, schemas: string[]): Promise<void> {
  if (schemas.length === 0) return;
  const { rows } = await pg.query<{ schema: string; name: string }>(
    `select schemaname as schema, matviewname as name from pg_catalog.pg_matviews
      where schemaname = any($1::text[]) and ispopulated order by 1, 2`,
    [schemas],
  );
  for (const view of rows) {
    await db.exec(`refresh materialized view ${quoteIdent(view.schema)}.${quoteIdent(view.name)}`);
  }
}

/**
 * Creates on the server the RLS policies of the platform's schemas (the owner's, on `realtime.messages`: the
 * migrations make the table, not its policies). Expressions are read with an empty search_path, so every name
 * in them is qualified; `roles` renames the embedded roles a policy names.
 */
export async function copyPolicies(
  pg: PGlite,
  db: Db,
  schemas: string[],
  roles: Record<string, string>,
): Promise<void> {
  if (schemas.length === 0) return;
  const rows = await pg.transaction(async (tx) => {
    await tx.query("set local search_path = ''");
    const { rows } = await tx.query<{
      schema: string;
      table: string;
      name: string;
      permissive: string;
      roles: string[];
      cmd: string;
      qual: string | null;
      with_check: string | null;
    }>(
      `select schemaname as schema, tablename as table, policyname as name, permissive, roles::text[] as roles,
              cmd, qual, with_check
         from pg_catalog.pg_policies where schemaname = any($1::text[]) order by 1, 2, 3`,
      [schemas],
    );
    return rows;
  });
  for (const p of rows) {
    const to = p.roles.map((r) => r === "public" ? "public" : quoteIdent(roles[r] ?? r)).join(", ");
    await db.exec(
      `create policy ${quoteIdent(p.name)} on ${quoteIdent(p.schema)}.${quoteIdent(p.table)} ` +
        `as ${p.permissive === "RESTRICTIVE" ? "restrictive" : "permissive"} for ${command(p.cmd)} to ${to}` +
        (p.qual === null ? "" : ` using (${p.qual})`) +
        (p.with_check === null ? "" : ` with check (${p.with_check})`),
    );
  }
}

const COMMANDS = new Set(["ALL", "SELECT", "INSERT", "UPDATE", "DELETE"]);

/** A policy's command as pg_policies spells it, checked (it is spliced into SQL). */
function command(cmd: string): string {
  if (!COMMANDS.has(cmd)) throw new Error(`Unknown policy command "${cmd}"`);
  return cmd.toLowerCase();
}
