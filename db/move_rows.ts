/**
 * Copies rows from an embedded database to a PostgreSQL one, table by table, as JSON: each value travels as its
 * text form and is read back by its own type on the server (vectors, arrays, bytea and timestamps alike).
 */
import type { PGlite } from "@electric-sql/pglite";
import { type Db, quoteIdent } from "./driver.ts";

/** A table to copy: its columns that hold values (generated ones are computed again). */
export interface MovedTable {
  schema: string;
  name: string;
  columns: string[];
}

/** Rows sent in one statement. */
const BATCH_ROWS = 500;

function qualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/** The ordinary tables of `schemas` (partitions included, their parents not), save those an extension owns. */
export async function listTables(pg: PGlite, schemas: string[]): Promise<MovedTable[]> {
  if (schemas.length === 0) return [];
  const { rows } = await pg.query<{ schema: string; name: string; columns: string[] }>(
    `select n.nspname as schema, c.relname as name,
            coalesce((select pg_catalog.array_agg(a.attname::text order by a.attnum) from pg_catalog.pg_attribute a
                       where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                         and a.attgenerated = ''), '{}') as columns
       from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname = any($1::text[])
        and not exists (select 1 from pg_catalog.pg_depend d
                         where d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                           and d.objid = c.oid and d.deptype = 'e')
      order by 1, 2`,
    [schemas],
  );
  return rows;
}

/** The rows of a table on the embedded side. */
export async function countSource(pg: PGlite, table: MovedTable): Promise<number> {
  const { rows } = await pg.query<{ n: string }>(
    `select pg_catalog.count(*)::text as n from ${qualified(table.schema, table.name)}`,
  );
  return Number(rows[0]!.n);
}

/** The rows of a table on the server. */
export async function countTarget(db: Db, table: MovedTable): Promise<number> {
  const [row] = await db.query<{ n: string }>(
    `select pg_catalog.count(*)::text as n from ${qualified(table.schema, table.name)}`,
  );
  return Number(row!.n);
}

/**
 * Replaces the server table's rows with the embedded table's. Triggers and foreign keys are off while it runs
 * (`session_replication_role = replica`): rows arrive in any table order, and a copy is not a new event (no
 * realtime message, no audit row).
 */
export async function copyTable(pg: PGlite, db: Db, table: MovedTable): Promise<void> {
  const target = qualified(table.schema, table.name);
  const columns = table.columns.map(quoteIdent).join(", ");
  await db.transaction(async (tx) => {
    await tx.exec("set local session_replication_role = replica");
    await tx.exec(`delete from ${target}`);
    if (table.columns.length === 0) return;
    const insert = `insert into ${target} (${columns}) overriding system value
      select ${columns} from pg_catalog.jsonb_populate_recordset(null::${target}, $1::jsonb)`;
    await pg.transaction(async (src) => {
      await src.exec(`declare move_rows no scroll cursor for
        select pg_catalog.to_jsonb(t)::text as row from ${target} t`);
      for (;;) {
        const { rows } = await src.query<{ row: string }>(`fetch ${BATCH_ROWS} from move_rows`);
        if (rows.length === 0) break;
        await tx.query(insert, [`[${rows.map((r) => r.row).join(",")}]`]);
        if (rows.length < BATCH_ROWS) break;
      }
      await src.exec("close move_rows");
    });
  }, { prepare: false });
}

/** A sequence and the value it last gave (null: never used). */
export interface MovedSequence {
  schema: string;
  name: string;
  last: string | null;
}

/** The sequences of `schemas` on the embedded side, with where each stands. */
export async function listSequences(pg: PGlite, schemas: string[]): Promise<MovedSequence[]> {
  if (schemas.length === 0) return [];
  const { rows } = await pg.query<MovedSequence>(
    `select schemaname as schema, sequencename as name, last_value::text as last
       from pg_catalog.pg_sequences where schemaname = any($1::text[]) order by 1, 2`,
    [schemas],
  );
  return rows;
}

/** Sets each sequence on the server where it stands on the embedded side (one never used stays unused). */
export async function copySequences(db: Db, sequences: MovedSequence[]): Promise<void> {
  for (const s of sequences) {
    if (s.last === null) continue;
    await db.query("select pg_catalog.setval($1::regclass, $2::bigint, true)", [
      qualified(s.schema, s.name),
      s.last,
    ]);
  }
}
