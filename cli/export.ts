/**
 * `deno task export --to postgres://user@host:5432/db`: moves the platform from its embedded databases (PGlite
 * under DATA_DIR) to a PostgreSQL server. Run it with the platform's own environment (DATA_DIR, PLATFORM_SECRET),
 * the platform stopped, towards an empty database. The server is laid out as the platform lays it out itself
 * (its migrations, one database and two logins per project), then each project's own schemas are recreated from
 * PGlite's pg_dump and every table's rows are copied; the row counts of both sides are printed and compared.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { PGlite } from "@electric-sql/pglite";
import { loadConfig } from "../services/config.ts";
import { platformSecret } from "../services/platform.ts";
import { Cipher } from "../lib/crypto.ts";
import { Databases } from "../db/databases.ts";
import type { Db } from "../db/driver.ts";
import { controlDir, heldOpen, isDatabaseDir, openSource, projectDir } from "../db/move_source.ts";
import { dumpSchemas, type DumpSection, userSchemas } from "../db/move_schema.ts";
import {
  copySequences,
  copyTable,
  countSource,
  countTarget,
  listSequences,
  listTables,
  type MovedTable,
} from "../db/move_rows.ts";
import { schemasOf, targetNotEmpty, undoMove } from "../db/move_target.ts";
import { copyIndexes, copyPolicies, refreshViews } from "../db/move_extras.ts";

/** One line of the final report: a table and its rows on both sides. */
export interface CountLine {
  database: string;
  table: string;
  source: number;
  target: number;
}

/** A refusal or a failure the user can act on: printed as it is, without a stack. */
class ExportError extends Error {}

/** The tables a move copies: the platform's record of applied migrations is the server's own already. */
function copied(tables: MovedTable[]): MovedTable[] {
  return tables.filter((t) => !(t.schema === "platform" && t.name === "migrations"));
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * Refuses a secret that did not write this data: on the server the platform could not read the project keys
 * it encrypted, and the project logins' passwords, derived from it, would differ.
 */
async function checkSecret(control: PGlite, secret: string): Promise<void> {
  const { rows } = await control.query<{ sealed: string }>(
    "select key_encrypted as sealed from platform.api_keys limit 1",
  );
  if (!rows[0]) return;
  try {
    await (await Cipher.fromSecret(secret)).decrypt(rows[0].sealed);
  } catch {
    throw new ExportError(
      "PLATFORM_SECRET differs from the one that wrote this data: use the platform's own",
    );
  }
}

async function currentUser(query: () => Promise<{ u: string }[]>): Promise<string> {
  return (await query())[0]!.u;
}

/** Copies the tables and sequences of `schemas`, then counts both sides. */
async function copyData(pg: PGlite, db: Db, schemas: string[], label: string): Promise<CountLine[]> {
  const tables = copied(await listTables(pg, schemas));
  for (const table of tables) await copyTable(pg, db, table);
  await copySequences(db, await listSequences(pg, schemas));
  const lines: CountLine[] = [];
  for (const table of tables) {
    lines.push({
      database: label,
      table: `${table.schema}.${table.name}`,
      source: await countSource(pg, table),
      target: await countTarget(db, table),
    });
  }
  return lines;
}

/**
 * Moves one project: its server side made first, as the platform makes a project (database, migrations, owner and
 * authenticator logins), then its own schemas replayed around its rows. Answers its tables' row counts; adds to
 * `skippedIndexes` the platform indexes the server could not build.
 */
async function moveProject(
  dataDir: string,
  target: Databases,
  ref: string,
  serverUser: string,
  skippedIndexes: string[],
): Promise<CountLine[]> {
  await target.createProject(ref);
  const { role: owner } = await target.ownerSession(ref);
  await target.tenant(ref);
  const db = await target.project(ref);
  const dir = projectDir(dataDir, ref);
  if (!await isDatabaseDir(dir)) return []; // never opened: as new on the server too
  const pg = await openSource(dir);
  try {
    const platformSchemas = await schemasOf(db);
    const own = await userSchemas(pg, new Set(platformSchemas));
    const embeddedUser = await currentUser(async () =>
      (await pg.query<{ u: string }>("select current_user as u")).rows
    );
    const roles = { project_owner: owner, [embeddedUser]: serverUser };
    const replay = async (section: DumpSection) => {
      const ddl = await dumpSchemas(pg, own, roles, section);
      if (ddl) await db.transaction((tx) => tx.exec(ddl), { prepare: false });
    };
    await replay("pre-data");
    const present = new Set((await schemasOf(db)).concat("public"));
    const schemas = [...platformSchemas, ...own].filter((s, i, all) =>
      present.has(s) && all.indexOf(s) === i
    );
    const lines = await copyData(pg, db, schemas, ref);
    await replay("post-data");
    skippedIndexes.push(...(await copyIndexes(pg, db, platformSchemas)).map((name) => `${ref}: ${name}`));
    await copyPolicies(pg, db, platformSchemas, roles);
    await refreshViews(pg, db, own);
    return lines;
  } finally {
    await pg.close();
  }
}

/** What a move did: the row counts of every table, and the indexes the server could not build. */
export interface ExportResult {
  lines: CountLine[];
  skippedIndexes: string[];
}

/** Moves the control database and every project database. */
export async function exportToPostgres(to: string): Promise<ExportResult> {
  const config = loadConfig();
  if (config.DATABASE_URL) {
    throw new ExportError("DATABASE_URL is set: this platform runs on PostgreSQL already");
  }
  if (!/^postgres(ql)?:\/\//.test(to) || !URL.canParse(to)) {
    throw new ExportError("--to must be a PostgreSQL URL: postgres://user@host:5432/database");
  }
  const kvPath = config.KV_URL ? null : config.KV_PATH ?? join(config.DATA_DIR, "kv.sqlite3");
  const held = await heldOpen(config.DATA_DIR, kvPath);
  if (held.length > 0) {
    throw new ExportError(
      "the platform is running (its embedded databases or KV are open): stop it first. If it is not running, it " +
        "stopped abruptly: start it and stop it once.",
    );
  }
  if (!await isDatabaseDir(controlDir(config.DATA_DIR))) {
    throw new ExportError(`no embedded database in DATA_DIR (${config.DATA_DIR}): nothing to export`);
  }
  if (!config.PLATFORM_SECRET && !await isFile(join(config.DATA_DIR, ".secret"))) {
    throw new ExportError(
      "PLATFORM_SECRET is not set and DATA_DIR has no .secret: set the platform's secret",
    );
  }
  const secret = await platformSecret(config);
  const control = await openSource(controlDir(config.DATA_DIR));
  let target: Databases | undefined;
  const lines: CountLine[] = [];
  const skippedIndexes: string[] = [];
  try {
    await checkSecret(control, secret);
    const refs = (await control.query<{ ref: string }>("select ref from platform.projects order by ref")).rows
      .map((r) => r.ref);
    const refusal = await targetNotEmpty(to, refs);
    if (refusal) throw new ExportError(refusal);
    target = await Databases.open({
      databaseUrl: to,
      dataDir: config.DATA_DIR,
      poolSize: 2,
      ownerSecret: secret,
    });
    const moved = target;
    try {
      lines.push(...await copyData(control, moved.control, await schemasOf(moved.control), "control"));
      const serverUser = await currentUser(() => moved.control.query("select current_user as u"));
      for (const ref of refs) {
        lines.push(...await moveProject(config.DATA_DIR, moved, ref, serverUser, skippedIndexes));
      }
    } catch (err) {
      // The target was empty: all it holds now is this move's, taken back so that it can simply run again.
      await undoMove(moved, refs).catch(() => {});
      throw err;
    }
  } finally {
    await control.close();
    await target?.close();
  }
  return { lines, skippedIndexes };
}

/** The report: one line per table, and whether every count matches. */
export function formatCounts(lines: CountLine[]): { text: string; mismatches: number } {
  const width = Math.max(5, ...lines.map((l) => `${l.database}  ${l.table}`.length));
  const out = [`${"table".padEnd(width)}  ${"source".padStart(8)}  ${"target".padStart(8)}`];
  let mismatches = 0;
  for (const l of lines) {
    const bad = l.source !== l.target;
    if (bad) mismatches++;
    out.push(
      `${`${l.database}  ${l.table}`.padEnd(width)}  ${String(l.source).padStart(8)}  ${
        String(l.target).padStart(8)
      }${bad ? "  MISMATCH" : ""}`,
    );
  }
  return { text: out.join("\n"), mismatches };
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { to: { type: "string" } } });
  if (!values.to) {
    console.error("Usage: deno task export --to postgres://user@host:5432/database");
    Deno.exit(2);
  }
  let result: ExportResult;
  try {
    result = await exportToPostgres(values.to);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(`Export ${err instanceof ExportError ? "refused" : "failed"}: ${message}`);
    Deno.exit(1);
  }
  const { lines, skippedIndexes } = result;
  const { text, mismatches } = formatCounts(lines);
  console.log(text);
  if (skippedIndexes.length > 0) {
    console.log(
      `\nNot built on the server (no pgvector there; searched by exact scan): ${skippedIndexes.join(", ")}`,
    );
  }
  if (mismatches > 0) {
    console.error(`Export failed: ${mismatches} table(s) differ in row count`);
    Deno.exit(1);
  }
  console.log(
    `\nExported ${lines.length} tables. Start the platform with DATABASE_URL=<the target URL> and the same ` +
      "PLATFORM_SECRET and DATA_DIR (Deno KV stays there).",
  );
}
