/**
 * The definitions of a project's own schemas (tables, policies, functions, grants…), taken from an embedded
 * database with PGlite's pg_dump and rewritten for a PostgreSQL server where the project's roles have other names.
 */
import type { PGlite } from "@electric-sql/pglite";
import { pgDump } from "@electric-sql/pglite-tools/pg_dump";

/** How the roles of the embedded database are named on the server. */
export interface RoleNames {
  /** Embedded role name → server role name (the project's owner, the superuser). */
  [embedded: string]: string;
}

/** A pg_dump pattern that matches exactly one schema name. */
function schemaPattern(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The schemas of a database that nothing installed: its own, or made by its owner (`public` among them). */
export async function userSchemas(pg: PGlite, platformSchemas: Set<string>): Promise<string[]> {
  const { rows } = await pg.query<{ name: string }>(`
    select n.nspname as name from pg_catalog.pg_namespace n
     where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
       and not exists (select 1 from pg_catalog.pg_depend d
                        where d.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
                          and d.objid = n.oid and d.deptype = 'e')
     order by 1`);
  return rows.map((r) => r.name).filter((name) => name === "public" || !platformSchemas.has(name));
}

const ROLE_LINE = /^(GRANT|REVOKE|ALTER DEFAULT PRIVILEGES)\b|^ALTER .* OWNER TO /;

/**
 * Rewrites a pg_dump script for the server: the embedded roles get their server names, `public` (which the
 * server's database has already) is not created again, and what an older server does not know is left out
 * (psql's `\restrict` lines, settings added after PostgreSQL 15).
 */
export function rewriteDump(script: string, roles: RoleNames): string {
  const names = Object.keys(roles).map((r) => r.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const role = new RegExp(`(?<=^|[\\s,])("?)(${names.join("|")})\\1(?=[\\s,;]|$)`, "g");
  const out: string[] = [];
  for (const line of script.split("\n")) {
    if (line.startsWith("\\")) continue;
    if (/^SET (transaction_timeout)\b/.test(line)) continue;
    if (/^CREATE SCHEMA public;$/.test(line) || /^COMMENT ON SCHEMA public IS/.test(line)) continue;
    out.push(ROLE_LINE.test(line) ? line.replace(role, (_m, _q, name: string) => quote(roles[name]!)) : line);
  }
  return out.join("\n");
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * pg_dump's sections: `pre-data` (schemas, types, functions, tables, views, sequences, grants) goes before the
 * rows, `post-data` (keys, indexes, constraints not validated, triggers, policies, default privileges) after
 * them, as a restore orders them: rows are checked against what their table held when they were written.
 */
export type DumpSection = "pre-data" | "post-data";

/** One section of the definitions of `schemas` in the embedded database, rewritten with {@linkcode rewriteDump}. */
export async function dumpSchemas(
  pg: PGlite,
  schemas: string[],
  roles: RoleNames,
  section: DumpSection,
): Promise<string> {
  if (schemas.length === 0) return "";
  const args = [
    "--schema-only",
    `--section=${section}`,
    ...schemas.map((s) => `--schema=${schemaPattern(s)}`),
  ];
  const file = await pgDump({ pg, args });
  return rewriteDump(await file.text(), roles);
}
