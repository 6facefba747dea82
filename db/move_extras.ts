/**
 * What a move copies besides tables and rows: indexes the platform builds on its own tables at run time (one
 * vector index per AI namespace) and the contents of a project's materialized views.
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
