/**
 * `deno task migrate [dir] [--project ref] [--url http://host:port --key sk_…]`: applies the `.sql` files of a
 * user's `migrations/` folder (default `./migrations`) to a project database, once each, in name order.
 * With `--url` and `--key` it goes through a running platform (`POST /v1/sql`); otherwise it opens the project
 * database from the same environment as the platform (DATABASE_URL or DATA_DIR; with PGlite, stop the platform
 * first: one process holds a PGlite directory).
 */
import { parseArgs } from "node:util";
import { loadConfig } from "../services/config.ts";
import { platformSecret } from "../services/platform.ts";
import { Databases } from "../db/databases.ts";
import {
  applyUserMigrations,
  databaseTarget,
  httpTarget,
  readUserMigrations,
} from "../db/user_migrations.ts";

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: { project: { type: "string" }, url: { type: "string" }, key: { type: "string" } },
    allowPositionals: true,
  });
  const dir = positionals[0] ?? "./migrations";
  const migrations = await readUserMigrations(dir);
  let applied: string[];
  if (values.url) {
    if (!values.key) throw new Error("--url needs --key (the project's secret key)");
    applied = await applyUserMigrations(httpTarget(values.url, values.key), migrations);
  } else {
    const config = loadConfig();
    const ref = values.project ?? config.DEFAULT_PROJECT_REF;
    const dbs = await Databases.open({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.DATA_DIR,
      poolSize: 2,
      ownerSecret: await platformSecret(config),
    });
    try {
      const [found] = await dbs.control.query("select 1 from platform.projects where ref = $1", [ref]);
      if (!found) throw new Error(`Project "${ref}" does not exist: start the platform once, or create it`);
      const owner = await dbs.ownerSession(ref);
      applied = await applyUserMigrations(databaseTarget(owner), migrations);
    } finally {
      await dbs.close();
    }
  }
  console.log(
    applied.length ? `Applied ${applied.length} migration(s): ${applied.join(", ")}` : "Nothing to apply",
  );
}
