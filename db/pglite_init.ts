/**
 * Creates a new embedded database directory (PostgreSQL's initdb) in a process of its own. initdb runs in a
 * second engine that PGlite starts beside the first, and its memory (over 300 MB) stays with the thread that
 * ran it: in a child process, all of it is given back when the child exits, and the platform then opens the
 * directory as on any restart.
 *
 *   deno run --allow-read --allow-write=<dir> --allow-env db/pglite_init.ts <dir> '<settings json>'
 */
import { join } from "node:path";

/** Whether `dir` holds a database already (initdb has run there). */
async function initialized(dir: string): Promise<boolean> {
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
  if (await initialized(dir)) return;
  const config = new URL("../deno.json", import.meta.url).pathname;
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      `--config=${config}`,
      "--allow-read",
      `--allow-write=${dir}`,
      "--allow-env",
      new URL(import.meta.url).pathname,
      dir,
      JSON.stringify(settings),
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(`Cannot create the embedded database in ${dir}: ${new TextDecoder().decode(stderr)}`);
  }
}

if (import.meta.main) {
  const [dir, settings] = Deno.args;
  const { PGlite } = await import("@electric-sql/pglite");
  const { startParams } = await import("./pglite_start.ts");
  const pg = await PGlite.create(dir!, { startParams: startParams(JSON.parse(settings ?? "{}")) });
  await pg.close();
}
