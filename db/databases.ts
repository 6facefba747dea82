import { join } from "node:path";
import { type Db, type Queryable, quoteIdent, sqlState } from "./driver.ts";
import { migrate, type Migration, readMigrations } from "./migrate.ts";
import { type EmbeddedDb, inBackground, openPglite, readRestFile, removeRestFile } from "./pglite.ts";
import { type PgliteLimits, pgliteLimits } from "./pglite_health.ts";
import { isPgliteDir, preparePgliteDir } from "./pglite_init.ts";
import { copyTemplate, removeUnfinishedCopies, type TemplateRecipe } from "./pglite_template.ts";
import { pgliteSettings } from "./pglite_settings.ts";
import { openPostgres } from "./postgres.ts";
import { PROJECT_DUE_SQL, projectDueAt } from "./project_due.ts";
import { memoVersion } from "./rest/schema.ts";
import { sha256Hex } from "../lib/crypto.ts";

function isConcurrentCatalogUpdate(err: unknown): boolean {
  return sqlState(err) === "XX000" && /tuple concurrently updated/.test((err as Error).message);
}

/**
 * Runs `fn` again when it collided with another database on a cluster-wide catalog (roles, database owners):
 * such a statement rolled back whole, so running it again is safe.
 */
async function retryCatalogCollisions<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConcurrentCatalogUpdate(err) || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt + Math.random() * 100));
    }
  }
}

/**
 * Keeps `value` under `key` so later callers share it, until it rejects: then the next caller tries again. A
 * rejection leaves alone an entry that has replaced it meanwhile.
 */
function keepUntilRejected<T>(map: Map<string, Promise<T>>, key: string, value: Promise<T>): Promise<T> {
  map.set(key, value);
  value.catch(() => {
    if (map.get(key) === value) map.delete(key);
  });
  return value;
}

/** Keeps `value` under `key` while it runs: later callers share it. */
function keepUntilSettled<T>(map: Map<string, Promise<T>>, key: string, value: Promise<T>): Promise<T> {
  map.set(key, value);
  const forget = () => {
    if (map.get(key) === value) map.delete(key);
  };
  value.then(forget, forget);
  return value;
}

/**
 * What a project's rest file must say it was written under: its migrations (each one's name and text) and the
 * due-work query. A file written before an upgrade is not trusted: the project opens, migrates and is asked
 * again. One that is trusted says every migration of this version has run: its first open skips the check.
 */
async function projectRestTag(migrations: Migration[]): Promise<string> {
  const all = JSON.stringify([migrations.map((m) => [m.name, m.sql]), PROJECT_DUE_SQL]);
  return `${migrations.at(-1)?.name ?? ""} ${(await sha256Hex(all)).slice(0, 16)}`;
}

/**
 * The template every new project database is copied from (db/pglite_template.ts): made and migrated by a child
 * process (db/pglite_init.ts), its clean close there writing its rest file with `tag`.
 */
function projectRecipe(migrations: Migration[], tag: string): TemplateRecipe {
  const settings = pgliteSettings();
  const memoSchemas = TEMPLATE_MEMO_SCHEMAS;
  return {
    kind: "project",
    migrations,
    inputs: { settings, searchPath: TENANT_SEARCH_PATH, tag, memo: [memoSchemas, memoVersion()] },
    make: (dir, restFile) =>
      preparePgliteDir(dir, settings, {
        migrations: "project",
        limits: templateLimits(),
        searchPath: TENANT_SEARCH_PATH,
        rest: restFile ? { file: restFile, tag, memoSchemas } : undefined,
      }),
  };
}

/** The control database's template, for a first start that finds one (DatabasesOptions.templates). */
function controlRecipe(migrations: Migration[]): TemplateRecipe {
  const settings = pgliteSettings();
  return {
    kind: "control",
    migrations,
    inputs: { settings, sharedBuffersMb: CONTROL_SHARED_BUFFERS_MB },
    make: (dir) =>
      preparePgliteDir(dir, settings, {
        migrations: "control",
        limits: pgliteLimits,
        sharedBuffersMb: CONTROL_SHARED_BUFFERS_MB,
      }),
  };
}

/**
 * The bounds a template is made under: the platform's, except that its rest file is written even when idle
 * databases never rest here (the template serves later starts, which may let them).
 */
function templateLimits(): PgliteLimits {
  return { ...pgliteLimits, idleSecs: Math.max(pgliteLimits.idleSecs, 3600) };
}

/**
 * The exposed schemas of the schema memo a new project database is made with (ProjectMemos): PostgREST's
 * default. Not the platform's setting: data directories that share a templates directory share one template
 * whatever they expose; a project exposing others reads its catalog on its first request.
 */
const TEMPLATE_MEMO_SCHEMAS = ["public"];

/**
 * Makes a project's embedded database `dir`, a copy of the project template in `templates`, with its rest file
 * (`<dir>.rest`, with a schema memo) when idle databases rest. A directory made already (an earlier creation) is
 * brought up to date by a child instead.
 */
async function makeProjectDir(
  dir: string,
  templates: string,
  migrations: Migration[],
  tag: string,
): Promise<void> {
  const restFile = pgliteLimits.idleSecs > 0 ? `${dir}.rest` : undefined;
  if (!await isPgliteDir(dir)) {
    return await copyTemplate(templates, projectRecipe(migrations, tag), dir, restFile);
  }
  await preparePgliteDir(dir, pgliteSettings(), {
    migrations: "project",
    limits: pgliteLimits,
    searchPath: TENANT_SEARCH_PATH,
    rest: restFile ? { file: restFile, tag, memoSchemas: TEMPLATE_MEMO_SCHEMAS } : undefined,
  });
}

/**
 * What a project database's rest file keeps for the next process besides when its work falls due: the data
 * API's schema caches (services/data/schema_caches.ts). Made as the database closes cleanly; handed back when a
 * later process first opens it, after its migrations' check and before any other statement runs on it, so that
 * its first request does not wait for the catalog to be read.
 */
export interface ProjectMemos {
  /** The memo of project `ref`'s database, read on `q` as it closes (null: none). */
  make(ref: string, q: Queryable): Promise<string | null>;
  /** Project `ref`'s database `db` opened with `memo`, from an earlier clean close. */
  opened(ref: string, db: Db, memo: string): void;
}

/** Options of {@linkcode Databases.open}. */
export interface DatabasesOptions {
  /** A PostgreSQL server URL; its database becomes the control database. Unset: embedded PGlite. */
  databaseUrl?: string;
  /** Where PGlite keeps its directories (`<dataDir>/pglite/control`, `<dataDir>/pglite/projects/<ref>`). */
  dataDir: string;
  /** Pool size of each PostgreSQL database. */
  poolSize: number;
  /** A secret from which each project owner's database password is derived (never stored). */
  ownerSecret: string;
  /**
   * The project a first start creates next (the default one): on PGlite its database is made beside the new
   * control database, in parallel, rather than after it.
   */
  firstProject?: string;
  /**
   * Where the templates of new embedded databases are kept (db/pglite_template.ts). Default:
   * `<dataDir>/pglite/templates`, for project databases. A directory given here may be shared by several data
   * directories (PGLITE_TEMPLATE_DIR): the control database of a first start is copied from there too.
   */
  templates?: string;
}

/** Where owner SQL runs: a connection as the owner, and the role to switch to in each transaction. */
export interface OwnerSession {
  db: Db;
  role: string;
  /**
   * On PGlite, whose one session serves the platform and every request: what puts that session back after the
   * owner's SQL (TransactionOptions.after: once its transaction has ended, however it ended), so that nothing it
   * set on the session (`set search_path`, a dump's `set_config(…, false)`, `set session authorization`, a temp
   * table, a held cursor or advisory lock) outlives it, even after a `commit` in its text followed by an error.
   * Absent on PostgreSQL, where the owner has a login of its own.
   */
  reset?: string;
}

/**
 * PGlite's session as it started: its own user (named: single-user mode has no session authorization to reset
 * to), no role, its start settings, no cursor, temp table or session lock of the owner's.
 */
const PGLITE_SESSION_RESET =
  "close all; set session authorization postgres; reset role; reset all; discard temp; " +
  "select pg_catalog.pg_advisory_unlock_all()";

/** The owner role of every embedded project database (each is its own PGlite instance). */
const PGLITE_OWNER = "project_owner";

/**
 * The search path of the platform's own sessions on a project database: the extensions the platform installed
 * (pgvector; first, so that they install there), then the catalog. Never `public`, which the project's owner
 * writes: nothing a tenant defines can stand in for a function or operator the platform's SQL names.
 */
const INTERNAL_SEARCH_PATH = "extensions, pg_catalog";

/**
 * The search path of the project's own sessions (its owner, the tenant login), as Supabase sets it. PGlite's one
 * session serves the platform and the project alike (the instance is the boundary there) and resolves names so.
 */
const TENANT_SEARCH_PATH = `"$user", public, extensions`;

/**
 * The control database's `shared_buffers` on PGlite, in MB: its tables are small (projects, keys, admin
 * sessions, settings, counters) and what is read most is cached above it, while each MB of buffers is resident
 * from the engine's start (about 14 MB less than the projects' 16).
 */
const CONTROL_SHARED_BUFFERS_MB = 4;

/** How many projects' generations are kept (Databases.projectGeneration) before they are all reset. */
const MAX_REF_GENERATIONS = 10_000;

/** PostgreSQL's longest identifier, in bytes. */
const MAX_IDENTIFIER = 63;

/** A short stable hash (FNV-1a, hex) that keeps a long role name unique once it is shortened. */
function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

/**
 * Databases owns the control database and one database per project.
 * Project databases are opened lazily and migrated once per process.
 */
export class Databases {
  readonly kind: "postgres" | "pglite";
  private readonly projects = new Map<string, Promise<Db>>();
  private readonly owners = new Map<string, Promise<OwnerSession>>();
  private readonly tenants = new Map<string, Promise<Db>>();
  /** The open embedded project databases (PGlite), for {@linkcode resting}. */
  private readonly embedded = new Map<string, EmbeddedDb>();
  /**
   * The embedded project databases not opened yet by this process that an earlier one closed cleanly: when work
   * stored in each next falls due (epoch ms; Infinity: nothing is), from their rest files.
   */
  private readonly restedBefore = new Map<string, number>();
  /** Embedded project databases being made by a child process (db/pglite_init.ts): nothing opens them meanwhile. */
  private readonly creating = new Map<string, Promise<void>>();
  /** Project databases being dropped: a creation or open of the same ref waits for the drop. */
  private readonly dropping = new Map<string, Promise<void>>();
  /** The first project's database, made beside a new control database (DatabasesOptions.firstProject). */
  private early: { ref: string; made: Promise<void> } | null = null;
  /**
   * What a project's rest file must say it was written under: its last migration and the due-work query. A
   * file written before an upgrade is not trusted: the project opens, migrates and is asked again.
   */
  private restTag = "";
  private generation = 0;
  /**
   * The generation of each project created or dropped by this process (a ref's last change); a ref not in it
   * has `generationFloor`. Bounded: when full it is emptied and the floor raised, which makes every project's
   * settings read again once.
   */
  private readonly refGenerations = new Map<string, number>();
  private generationFloor = 0;
  /** Set once {@linkcode close} begins: nothing opens a database any more. */
  private closing = false;
  private projectMigrations: Migration[] = [];
  private memos: ProjectMemos | undefined;

  private constructor(private readonly options: DatabasesOptions, readonly control: Db) {
    this.kind = control.kind;
  }

  /** Opens and migrates the control database. */
  static async open(options: DatabasesOptions): Promise<Databases> {
    const controlDir = join(options.dataDir, "pglite", "control");
    const templates = Databases.templates(options);
    // A first start: the control database made and migrated by a child, whose memory goes with it (or copied from
    // a shared template); the first project's beside it.
    const firstStart = !options.databaseUrl && !await isPgliteDir(controlDir);
    if (!options.databaseUrl) {
      await removeUnfinishedCopies(join(options.dataDir, "pglite"));
      await removeUnfinishedCopies(join(options.dataDir, "pglite", "projects"));
    }
    let early: Databases["early"] = null;
    if (firstStart && options.firstProject) {
      const migrations = await readMigrations("project");
      const dir = join(options.dataDir, "pglite", "projects", options.firstProject);
      early = {
        ref: options.firstProject,
        made: makeProjectDir(dir, templates, migrations, await projectRestTag(migrations)),
      };
      early.made.catch(() => {}); // its failure is the creation's to report
    }
    let control: Db | undefined;
    try {
      if (firstStart) {
        const recipe = controlRecipe(await readMigrations("control"));
        if (options.templates) await copyTemplate(options.templates, recipe, controlDir);
        else await recipe.make(controlDir);
      }
      control = options.databaseUrl
        ? openPostgres(options.databaseUrl, { max: options.poolSize })
        : await openPglite(controlDir, {
          sharedBuffersMb: CONTROL_SHARED_BUFFERS_MB,
          // Nothing in it falls due: what the workers read from it (the project list) is kept in memory.
          closeWhenIdle: { dueAt: () => Promise.resolve(null) },
        });
      const dbs = new Databases(options, control);
      dbs.early = early;
      await migrate(control, await readMigrations("control"));
      dbs.projectMigrations = await readMigrations("project");
      if (dbs.kind === "pglite" && pgliteLimits.idleSecs > 0) await dbs.readRestFiles();
      return dbs;
    } catch (err) {
      await control?.close();
      // A child still making the first project's directory must end before another start may make it again.
      await early?.made.catch(() => {});
      throw err;
    }
  }

  /** Where the templates of new embedded databases are (DatabasesOptions.templates). */
  private static templates(options: DatabasesOptions): string {
    return options.templates ?? join(options.dataDir, "pglite", "templates");
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

  /** A project database's rest file (db/pglite.ts), beside its directory: its engine cannot write there. */
  private restFile(ref: string): string {
    return `${this.projectDir(ref)}.rest`;
  }

  /**
   * Reads what the previous process left of its project databases: one it closed cleanly stays closed here, as
   * if it had rested, until its work falls due or a call opens it, so a restart does not open them all.
   */
  private async readRestFiles(): Promise<void> {
    this.restTag = await projectRestTag(this.projectMigrations);
    const dir = join(this.options.dataDir, "pglite", "projects");
    const entries = await Array.fromAsync(Deno.readDir(dir)).catch((err) => {
      if (err instanceof Deno.errors.NotFound) return [];
      throw err;
    });
    // A directory left by a project deleted as the process crashed is no project: nothing may open it.
    const projects = new Set(
      (await this.control.query<{ ref: string }>("select ref from platform.projects")).map((p) => p.ref),
    );
    for (const entry of entries) {
      const ref = entry.isFile && entry.name.endsWith(".rest") ? entry.name.slice(0, -".rest".length) : "";
      if (!projects.has(ref)) continue;
      const rest = await readRestFile(join(dir, entry.name), join(dir, ref), this.restTag);
      if (rest !== undefined) this.restedBefore.set(ref, rest.dueAt ?? Infinity);
    }
  }

  /**
   * Creates the database of a new project (idempotent) and applies its migrations. Whoever asks for the project
   * meanwhile (a worker that has listed it already) waits for this creation rather than finding no database.
   * An embedded one is made by a child process and left closed, as if it rested: its first call opens it.
   */
  createProject(ref: string): Promise<void> {
    if (this.closing) return Promise.reject(new Error("The databases are closed"));
    const dropping = this.dropping.get(ref);
    if (dropping) return dropping.catch(() => {}).then(() => this.createProject(ref));
    this.projectsChanged(ref);
    if (this.kind === "pglite") {
      const open = this.projects.get(ref);
      if (open) return open.then(() => {}); // opened (so made) already by this process
      const creating = this.creating.get(ref);
      if (creating) return creating;
      let made: Promise<void>;
      if (this.early?.ref === ref) {
        made = this.early.made;
        this.early = null;
      } else {
        const templates = Databases.templates(this.options);
        made = makeProjectDir(this.projectDir(ref), templates, this.projectMigrations, this.restTag);
      }
      return keepUntilSettled(this.creating, ref, made.then(() => this.restsAfterMade(ref)));
    }
    const earlier = this.projects.get(ref);
    return keepUntilRejected(
      this.projects,
      ref,
      (async () => {
        await this.createDatabase(ref);
        // An open that began before the database existed has failed; one that began after it is the project.
        return await earlier?.catch(() => undefined) ?? await this.openProject(ref);
      })(),
    ).then(() => {});
  }

  /** A project database made by a child process rests until its first call, as after a restart. */
  private async restsAfterMade(ref: string): Promise<void> {
    if (pgliteLimits.idleSecs <= 0) return; // no rest file was written
    const rest = await readRestFile(this.restFile(ref), this.projectDir(ref), this.restTag);
    if (rest !== undefined) this.restedBefore.set(ref, rest.dueAt ?? Infinity);
  }

  private async createDatabase(ref: string): Promise<void> {
    for (let attempt = 1;; attempt++) {
      try {
        await this.control.exec(`create database ${quoteIdent(this.databaseName(ref))}`);
        return;
      } catch (err) {
        if (sqlState(err) === "42P04") return; // duplicate_database: created by another instance
        // object_in_use: another session is copying template1 at this moment; wait and try again.
        if (sqlState(err) !== "55006" || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  /** The database of a project, opened and migrated on first use. */
  project(ref: string): Promise<Db> {
    if (this.closing) return Promise.reject(new Error("The databases are closed"));
    // The first project's database, still being made beside the control database: its creation finishes first.
    if (this.early?.ref === ref) return this.createProject(ref).then(() => this.project(ref));
    const waiting = this.creating.get(ref) ?? this.dropping.get(ref)?.catch(() => {});
    if (waiting) return waiting.then(() => this.project(ref));
    return this.projects.get(ref) ?? keepUntilRejected(this.projects, ref, this.openProject(ref));
  }

  /**
   * Whether a project's embedded database rests (closed for idleness, PGLITE_IDLE_SECS) with nothing stored in
   * it due yet: periodic checks (cron, sweeps, alerts) skip it rather than open it to find nothing. Any call
   * opens it again. Never on PostgreSQL, whose databases stay open.
   */
  resting(ref: string): boolean {
    // Being made by a child (PGlite only): nothing in it is due, and it rests once made.
    if (this.creating.has(ref) || this.early?.ref === ref) return true;
    const open = this.embedded.get(ref);
    if (open) return open.isResting(Date.now());
    return Date.now() < (this.restedBefore.get(ref) ?? 0);
  }

  /**
   * Starts opening a project's embedded database if it rests, because a request for it has begun: the control
   * database's lookups before its first call (its key, its settings) then overlap the opening instead of
   * preceding it. Only a database known to exist is opened: a request for an unknown ref creates nothing.
   */
  warm(ref: string): void {
    if (this.kind !== "pglite" || this.closing) return;
    const open = this.embedded.get(ref);
    if (open) open.wake();
    else if (this.restedBefore.has(ref)) this.project(ref).catch(() => {}); // its callers see a failure
  }

  /**
   * Changes whenever a project is created or dropped: what is kept of the projects' rows in the control database
   * (the list of projects) is read again after.
   */
  get projectsGeneration(): number {
    return this.generation;
  }

  /**
   * Changes whenever project `ref` is created or dropped: what is kept of its row (its settings) is read again
   * after, so a ref deleted and created again never gets the old project's, while the other projects' stay.
   */
  projectGeneration(ref: string): number {
    return this.refGenerations.get(ref) ?? this.generationFloor;
  }

  /**
   * Project `ref` was created or dropped, or its row is being written: see {@linkcode projectsGeneration} and
   * {@linkcode projectGeneration}.
   */
  projectsChanged(ref: string): void {
    if (this.refGenerations.size >= MAX_REF_GENERATIONS) {
      this.refGenerations.clear();
      this.generationFloor = this.generation + 1;
    }
    this.refGenerations.set(ref, ++this.generation);
  }

  /** What the projects' rest files keep for the next process (PGlite; see {@linkcode ProjectMemos}). */
  keepMemos(memos: ProjectMemos): void {
    this.memos = memos;
  }

  /**
   * The embedded databases open now rest as soon as nothing runs on them, unless a request uses them first:
   * called once the platform's start is done with them (what requests read from the control database is kept
   * in memory by then). Without PGLITE_IDLE_SECS (0), nothing closes.
   */
  restSoon(): void {
    if (this.kind !== "pglite" || pgliteLimits.idleSecs <= 0) return;
    (this.control as EmbeddedDb).restSoon();
    for (const db of this.embedded.values()) db.restSoon();
  }

  /** Whether the embedded control database rests (closed for idleness; any call opens it again). */
  controlResting(): boolean {
    return this.kind === "pglite" && (this.control as EmbeddedDb).isResting(Date.now());
  }

  /**
   * Runs a periodic check (a cron round, a sweep, an alert evaluation): what it does on embedded databases
   * does not count as use, so it does not keep an idle one open (PGLITE_IDLE_SECS).
   */
  inBackground<T>(fn: () => Promise<T>): Promise<T> {
    return this.kind === "pglite" ? inBackground(fn) : fn();
  }

  private async openProject(ref: string): Promise<Db> {
    const { db, memo, migrated } = this.kind === "postgres"
      ? {
        db: openPostgres(this.projectUrl(ref), {
          max: this.options.poolSize,
          searchPath: INTERNAL_SEARCH_PATH,
        }),
      }
      : await this.openEmbeddedProject(ref);
    for (let attempt = 1;; attempt++) {
      try {
        // pgvector installs into the first schema of the platform's search path, which must exist.
        if (this.kind === "postgres") await db.exec("create schema if not exists extensions");
        if (!migrated) await migrate(db, this.projectMigrations);
        // Before anyone else has the database: nothing but the platform's check above has run on it.
        if (memo !== undefined) this.memos?.opened(ref, db, memo);
        return db;
      } catch (err) {
        // Role statements update cluster-wide catalogs; two databases migrating at once may collide there
        // ("tuple concurrently updated"). The migration rolled back as a whole: run it again.
        if (isConcurrentCatalogUpdate(err) && attempt < 5) {
          await new Promise((r) => setTimeout(r, 50 * attempt + Math.random() * 100));
          continue;
        }
        await db.close();
        // Its schema is not this version's: no rest file may say otherwise to the next start.
        if (this.kind === "pglite") await removeRestFile(this.restFile(ref));
        throw err;
      }
    }
  }

  /**
   * A project's embedded database, and when it rested since an earlier process (or since it was made), the memo
   * of its rest file and that its migrations have all run (the file's tag says so).
   */
  private async openEmbeddedProject(ref: string): Promise<{ db: Db; memo?: string; migrated?: boolean }> {
    const dir = this.projectDir(ref);
    // Read again as it opens (the file goes then): it still describes the directory, which nothing has opened.
    const rest = this.restedBefore.delete(ref)
      ? await readRestFile(this.restFile(ref), dir, this.restTag)
      : undefined;
    const db = await openPglite(dir, {
      searchPath: TENANT_SEARCH_PATH,
      closeWhenIdle: {
        dueAt: projectDueAt,
        restFile: this.restFile(ref),
        restTag: this.restTag,
        memo: (q) => this.memos?.make(ref, q) ?? Promise.resolve(null),
      },
    });
    this.embedded.set(ref, db);
    const close = db.close;
    db.close = async () => {
      if (this.embedded.get(ref) === db) this.embedded.delete(ref);
      await close();
    };
    if (!rest) return { db };
    return rest.memo === undefined ? { db, migrated: true } : { db, memo: rest.memo, migrated: true };
  }

  /**
   * The session that runs a project owner's SQL. On PostgreSQL it is a separate login as the project's own role
   * (not a superuser, owner of the project database only), so no statement can take back the platform's rights;
   * on PGlite, where one embedded instance has one user, it is `set local role` to the owner in each transaction.
   */
  ownerSession(ref: string): Promise<OwnerSession> {
    return this.owners.get(ref) ?? keepUntilRejected(this.owners, ref, this.openOwner(ref));
  }

  private ownerName(ref: string): string {
    return this.kind === "postgres" ? this.roleName(ref, "owner") : PGLITE_OWNER;
  }

  /**
   * A project's own login role on PostgreSQL (roles are cluster-wide): `<database>_<suffix>`, its database part
   * shortened and hashed when the whole would pass PostgreSQL's identifier limit.
   */
  private roleName(ref: string, suffix: "owner" | "authenticator"): string {
    const database = this.databaseName(ref);
    const whole = `${database}_${suffix}`;
    if (new TextEncoder().encode(whole).length <= MAX_IDENTIFIER) return whole;
    return `${database.slice(0, MAX_IDENTIFIER - suffix.length - 10)}_${shortHash(database)}_${suffix}`;
  }

  /** The password of a project's login role, derived from the platform's secret (never stored). */
  private async rolePassword(ref: string, suffix: "owner" | "authenticator"): Promise<string> {
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(this.options.ownerSecret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const mac = await crypto.subtle.sign(
      "HMAC",
      key,
      new TextEncoder().encode(`db-${suffix}:${this.databaseName(ref)}`),
    );
    return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  private async openOwner(ref: string): Promise<OwnerSession> {
    const owner = this.ownerName(ref);
    const project = await this.project(ref);
    if (this.kind === "pglite") {
      await project.exec(`do $$ begin create role ${quoteIdent(owner)} nologin;
        exception when duplicate_object then null; end $$`);
      await project.query("select platform.setup_owner($1)", [owner]);
      return { db: project, role: owner, reset: PGLITE_SESSION_RESET };
    }
    const url = await this.projectLogin(
      ref,
      "owner",
      `alter database ${quoteIdent(this.databaseName(ref))} owner to ${quoteIdent(owner)}`,
    );
    await project.query("select platform.setup_owner($1)", [owner]);
    return { db: openPostgres(url, { max: 2, idleTimeout: 30, prepare: false }), role: owner };
  }

  /**
   * The pool that runs tenant SQL (the data API, RPC, realtime's visibility checks, NL-to-SQL): each transaction
   * switches to the caller's role with `set local role`. On PostgreSQL it is a login of its own per project
   * database, as PostgREST's `authenticator`: not a superuser, `NOINHERIT`, member of `anon`, `authenticated` and
   * `service_role` only, so `reset role` or `set session authorization` in tenant code reaches no right at all.
   * The platform's own pool ({@linkcode project}) never runs tenant SQL. On PGlite, which has one superuser
   * session, it is the project's instance itself: there the boundary is the instance (docs/security.md).
   */
  tenant(ref: string): Promise<Db> {
    if (this.kind === "pglite") return this.project(ref);
    return this.tenants.get(ref) ?? keepUntilRejected(this.tenants, ref, this.openTenant(ref));
  }

  private async openTenant(ref: string): Promise<Db> {
    const login = this.roleName(ref, "authenticator");
    const project = await this.project(ref);
    const url = await this.projectLogin(
      ref,
      "authenticator",
      `grant anon, authenticated, service_role to ${quoteIdent(login)}`,
    );
    await project.query("select platform.setup_authenticator($1)", [login]);
    return openPostgres(url, { max: this.options.poolSize });
  }

  /**
   * Creates (or brings up to date) one of a project's logins on PostgreSQL: never a superuser, no rights of its
   * own beyond `rights` (SQL run on the control database), the only kind of login that may connect to the
   * project's database. Answers the URL it connects with.
   */
  private async projectLogin(
    ref: string,
    suffix: "owner" | "authenticator",
    rights: string,
  ): Promise<string> {
    const login = quoteIdent(this.roleName(ref, suffix));
    const database = quoteIdent(this.databaseName(ref));
    const password = await this.rolePassword(ref, suffix); // hex: safe inside a literal
    await retryCatalogCollisions(() =>
      this.control.exec(`
        do $$ begin create role ${login} login;
        exception when duplicate_object or unique_violation then null; end $$;
        alter role ${login} login password '${password}'
          nosuperuser nocreatedb nocreaterole noreplication nobypassrls noinherit;
        ${rights};
        revoke connect on database ${database} from public;
        grant connect on database ${database} to ${login};`)
    );
    const url = new URL(this.projectUrl(ref));
    url.username = encodeURIComponent(this.roleName(ref, suffix));
    url.password = password;
    return url.toString();
  }

  /** Closes and destroys a project's database. */
  dropProject(ref: string): Promise<void> {
    return keepUntilSettled(this.dropping, ref, this.drop(ref));
  }

  private async drop(ref: string): Promise<void> {
    this.projectsChanged(ref);
    await this.creating.get(ref)?.catch(() => {});
    const owner = this.owners.get(ref);
    this.owners.delete(ref);
    if (owner && this.kind === "postgres") await (await owner.catch(() => null))?.db.close();
    const tenant = this.tenants.get(ref);
    this.tenants.delete(ref);
    if (tenant) await (await tenant.catch(() => null))?.close();
    const open = this.projects.get(ref);
    this.projects.delete(ref);
    if (open) await (await open.catch(() => null))?.close();
    if (this.kind === "postgres") {
      await this.control.exec(`drop database if exists ${quoteIdent(this.databaseName(ref))} with (force)`);
      for (const role of [this.roleName(ref, "authenticator"), this.ownerName(ref)]) {
        await retryCatalogCollisions(() => this.control.exec(`drop role if exists ${quoteIdent(role)}`));
      }
    } else {
      this.restedBefore.delete(ref);
      await removeRestFile(this.restFile(ref));
      await Deno.remove(this.projectDir(ref), { recursive: true }).catch((err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      });
    }
    this.projectsChanged(ref);
  }

  /** Closes every database. */
  async close(): Promise<void> {
    this.closing = true;
    const making = [...this.creating.values(), ...this.early ? [this.early.made] : []];
    await Promise.all(making.map((made) => made.catch(() => {})));
    const owners = [...this.owners.values()];
    this.owners.clear();
    const tenants = [...this.tenants.values()];
    this.tenants.clear();
    if (this.kind === "postgres") {
      await Promise.all(owners.map(async (o) => (await o.catch(() => null))?.db.close()));
      await Promise.all(tenants.map(async (t) => (await t.catch(() => null))?.close()));
    }
    const open = [...this.projects.values()];
    this.projects.clear();
    await Promise.all(open.map(async (p) => (await p.catch(() => null))?.close()));
    await this.control.close();
  }
}
