/**
 * Creates a new embedded database directory in a process of its own: PostgreSQL's initdb and, when asked, the
 * platform's migrations. initdb runs in a second engine that PGlite starts beside the first, and its memory (over
 * 300 MB) stays with the thread that ran it; an engine that ran the migrations leaves some tens of MB in the
 * process after it closes (V8's pages, malloc's arenas). In a child, all of it is given back when the child
 * exits, and the platform opens the directory only when it is used, as on any restart.
 */
import { join } from "node:path";
import type { MigrationSet } from "./migrate.ts";
import type { PgliteLimits } from "./pglite_health.ts";

/** What the child does besides initdb: migrate the new database, as the platform would open it. */
export interface PrepareJob {
  /** The migrations to apply. */
  migrations: MigrationSet;
  /** The platform's bounds of embedded databases (its rest file is written only when they say to). */
  limits: PgliteLimits;
  searchPath?: string;
  sharedBuffersMb?: number;
  /**
   * For a project database: the rest file its clean close writes (db/pglite.ts), with the platform's tag and the
   * schema memo of the exposed schemas `memoSchemas` (db/databases.ts, ProjectMemos).
   */
  rest?: { file: string; tag: string; memoSchemas?: readonly string[] };
}

/** What the child is asked (db/pglite_init_child.ts). */
export interface ChildJob {
  settings: Record<string, string>;
  prepare?: PrepareJob;
}

/** Whether `dir` holds a database already (initdb has run there). */
export async function isPgliteDir(dir: string): Promise<boolean> {
  try {
    await Deno.stat(join(dir, "PG_VERSION"));
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** Runs initdb in `dir` in a child process, unless a database is there already. */
export async function initPgliteDir(dir: string, settings: Record<string, string>): Promise<void> {
  if (await isPgliteDir(dir)) return;
  await runChild(dir, { settings }, [dir]);
}

/**
 * Makes `dir` a migrated database in a child process (initdb first when it holds none): the platform's process
 * never opens an engine to create a database. For a project, the child's clean close writes its rest file.
 */
export async function preparePgliteDir(
  dir: string,
  settings: Record<string, string>,
  prepare: PrepareJob,
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const writable = prepare.rest ? [dir, prepare.rest.file, `${prepare.rest.file}.next`] : [dir];
  await runChild(dir, { settings, prepare }, writable);
}

/**
 * What a child may read: what it writes (its directory; a rest file, which renaming reads), the platform's `db`
 * and `lib` folders (the migrations, and the engine thread's modules, which a worker is started from), and the
 * packages of PGlite and pgvector (the engine's files and the extensions' archives); anything, when a package is
 * not on a local disk. Not the data directory's secret, nor anything else of the platform's.
 */
function readable(writable: string[]): string {
  const packages = ["@electric-sql/pglite", "@electric-sql/pglite-pgvector"].map((name) =>
    new URL(".", import.meta.resolve(name))
  );
  if (packages.some((url) => url.protocol !== "file:")) return "--allow-read";
  const code = [new URL(".", import.meta.url), new URL("../lib/", import.meta.url)];
  return `--allow-read=${[...writable, ...[...code, ...packages].map((url) => url.pathname)].join(",")}`;
}

/** The environment a child gets from the platform's. */
const CHILD_ENV = ["HOME", "PATH", "TMPDIR", "DENO_DIR", "XDG_CACHE_HOME", "NO_COLOR"];

async function runChild(dir: string, job: ChildJob, writable: string[]): Promise<void> {
  const config = new URL("../deno.json", import.meta.url).pathname;
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      `--config=${config}`,
      readable(writable),
      `--allow-write=${writable.join(",")}`,
      "--allow-env",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      new URL("./pglite_init_child.ts", import.meta.url).pathname,
      dir,
      JSON.stringify(job),
    ],
    // Only what Deno needs to find its cache: none of the platform's secrets.
    clearEnv: true,
    env: Object.fromEntries(CHILD_ENV.flatMap((name) => {
      const value = Deno.env.get(name);
      return value === undefined ? [] : [[name, value]];
    })),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(`Cannot create the embedded database in ${dir}: ${new TextDecoder().decode(stderr)}`);
  }
}
