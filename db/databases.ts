import { join } from "node:path";
import { type Db, quoteIdent, sqlState } from "./driver.ts";
import { migrate, type Migration, readMigrations } from "./migrate.ts";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";

function isConcurrentCatalogUpdate(err: unknown): boolean {
  return sqlState(err) === "XX000" && /tuple concurrently updated/.test((err as Error).message);
}

/** Options of {@linkcode Databases.open}. */
export interface DatabasesOptions {
  /** A PostgreSQL server URL; its database becomes the control database. Unset: embedded PGlite. */
  databaseUrl?: string;
  /** Where PGlite keeps its directories (`<dataDir>/pglite/control`, `<dataDir>/pglite/projects/<ref>`). */
  dataDir: string;
  /** Pool size of each PostgreSQL database. */
  poolSize: number;
}

/**
 * Databases owns the control database and one database per project (decisions §1: database per project).
 * Project databases are opened lazily and migrated once per process.
 */
export class Databases {
  readonly kind: "postgres" | "pglite";
  private readonly projects = new Map<string, Promise<Db>>();
  private projectMigrations: Migration[] = [];

  private constructor(private readonly options: DatabasesOptions, readonly control: Db) {
    this.kind = control.kind;
  }

  /** Opens and migrates the control database. */
  static async open(options: DatabasesOptions): Promise<Databases> {
    const control = options.databaseUrl
      ? openPostgres(options.databaseUrl, { max: options.poolSize })
      : await openPglite(join(options.dataDir, "pglite", "control"));
    const dbs = new Databases(options, control);
    try {
      await migrate(control, await readMigrations("control"));
      dbs.projectMigrations = await readMigrations("project");
    } catch (err) {
      await control.close();
      throw err;
    }
    return dbs;
  }

  /** The name of a project's PostgreSQL database: `<control database>_<ref>`. */
  private databaseName(ref: string): string {
    const url = new URL(this.options.databaseUrl!);
    return `${decodeURIComponent(url.pathname.slice(1)) || "postgres"}_${ref}`;
  }

  private projectUrl(ref: string): string {
    const url = new URL(this.options.databaseUrl!);
    url.pathname = "/" + encodeURIComponent(this.databaseName(ref));
    return url.toString();
  }

  private projectDir(ref: string): string {
    return join(this.options.dataDir, "pglite", "projects", ref);
  }

  /** Creates the database of a new project (idempotent) and applies its migrations. */
  async createProject(ref: string): Promise<Db> {
    if (this.kind === "postgres") {
      for (let attempt = 1;; attempt++) {
        try {
          await this.control.exec(`create database ${quoteIdent(this.databaseName(ref))}`);
          break;
        } catch (err) {
          if (sqlState(err) === "42P04") break; // duplicate_database: created by another instance
          // object_in_use: another session is copying template1 at this moment; wait and try again.
          if (sqlState(err) !== "55006" || attempt >= 5) throw err;
          await new Promise((r) => setTimeout(r, 100 * attempt));
        }
      }
    }
    return await this.project(ref);
  }

  /** The database of a project, opened and migrated on first use. */
  project(ref: string): Promise<Db> {
    let db = this.projects.get(ref);
    if (!db) {
      db = this.openProject(ref);
      this.projects.set(ref, db);
      db.catch(() => this.projects.delete(ref));
    }
    return db;
  }

  private async openProject(ref: string): Promise<Db> {
    const db = this.kind === "postgres"
      ? openPostgres(this.projectUrl(ref), { max: this.options.poolSize })
      : await openPglite(this.projectDir(ref));
    for (let attempt = 1;; attempt++) {
      try {
        await migrate(db, this.projectMigrations);
        return db;
      } catch (err) {
        // Role statements update cluster-wide catalogs; two databases migrating at once may collide there
        // ("tuple concurrently updated"). The migration rolled back as a whole: run it again.
        if (isConcurrentCatalogUpdate(err) && attempt < 5) {
          await new Promise((r) => setTimeout(r, 50 * attempt + Math.random() * 100));
          continue;
        }
        await db.close();
        throw err;
      }
    }
  }

  /** Closes and destroys a project's database. */
  async dropProject(ref: string): Promise<void> {
    const open = this.projects.get(ref);
    this.projects.delete(ref);
    if (open) await (await open.catch(() => null))?.close();
    if (this.kind === "postgres") {
      await this.control.exec(`drop database if exists ${quoteIdent(this.databaseName(ref))} with (force)`);
    } else {
      await Deno.remove(this.projectDir(ref), { recursive: true }).catch((err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      });
    }
  }

  /** Closes every database. */
  async close(): Promise<void> {
    const open = [...this.projects.values()];
    this.projects.clear();
    await Promise.all(open.map(async (p) => (await p.catch(() => null))?.close()));
    await this.control.close();
  }
}
