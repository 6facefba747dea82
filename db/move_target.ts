/**
 * The PostgreSQL side of a move from the embedded databases: the target must hold nothing yet, and what the
 * platform's migrations create there is told apart from what a project made itself.
 */
import { type Db, quoteIdent } from "./driver.ts";
import type { Databases } from "./databases.ts";
import { openPostgres } from "./postgres.ts";

/** The schemas that are PostgreSQL's own, never copied and never counted as content. */
const SYSTEM_SCHEMA = `n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'`;

/** The schemas of a database besides PostgreSQL's own and `public`. */
export async function schemasOf(db: Db): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `select n.nspname as name from pg_catalog.pg_namespace n where ${SYSTEM_SCHEMA} and n.nspname <> 'public'
      order by 1`,
  );
  return rows.map((r) => r.name);
}

/** The database of each project on the server, as the platform names it: `<control database>_<ref>`. */
export function projectDatabaseName(url: string, ref: string): string {
  return `${decodeURIComponent(new URL(url).pathname.slice(1)) || "postgres"}_${ref}`;
}

/**
 * Why the target cannot take the move, or null when it is empty: no schema of its own, nothing in `public`, and
 * no database yet for any of `refs`.
 */
export async function targetNotEmpty(url: string, refs: string[]): Promise<string | null> {
  const db = openPostgres(url, { max: 1 });
  try {
    const [found] = await db.query<{ schemas: string; relations: string }>(
      `select (select pg_catalog.count(*) from pg_catalog.pg_namespace n
                where ${SYSTEM_SCHEMA} and n.nspname <> 'public')::text as schemas,
              (select pg_catalog.count(*) from pg_catalog.pg_class c
                 join pg_catalog.pg_namespace n on n.oid = c.relnamespace
                where n.nspname = 'public')::text as relations`,
    );
    if (Number(found!.schemas) > 0 || Number(found!.relations) > 0) {
      return "the target database is not empty: give the URL of a new, empty database";
    }
    const names = refs.map((ref) => projectDatabaseName(url, ref));
    const taken = await db.query<{ datname: string }>(
      "select datname from pg_catalog.pg_database where datname = any($1::text[]) order by 1",
      [names],
    );
    if (taken.length > 0) {
      return `a project database exists on the server already (${
        taken.map((t) => quoteIdent(t.datname)).join(", ")
      }): drop it or choose another target database`;
    }
    return null;
  } finally {
    await db.close();
  }
}

/**
 * Takes back what a move that failed made on a target that was empty: each project's database and logins, and
 * the control database's schemas. The cluster-wide roles its migrations made (`anon`, `authenticated`…) stay:
 * other databases of the server may use them.
 */
export async function undoMove(dbs: Databases, refs: string[]): Promise<void> {
  for (const ref of refs) await dbs.dropProject(ref);
  for (const schema of await schemasOf(dbs.control)) {
    await dbs.control.exec(`drop schema ${quoteIdent(schema)} cascade`);
  }
}
