import type { Db } from "../../db/driver.ts";
import { introspect, type SchemaCache } from "../../db/rest/schema.ts";
import { log } from "../../lib/log.ts";

/** The channel the project migration 0030 notifies after DDL (an event trigger). */
export const SCHEMA_CHANNEL = "platform_schema";

/** Least time between two reloads forced by an unknown table, so a stream of bad names cannot hammer the catalog. */
const MIN_FORCED_RELOAD_MS = 1000;

interface Entry {
  /** The database the cache describes: a project dropped and created again gets a new one. */
  db: Db;
  /** Every exposed schema's cache, by name, loaded together. */
  cache: Promise<Map<string, SchemaCache>>;
  generation: number;
  /** The exposed schemas the cache holds, joined: a project whose setting changes loads them again. */
  exposed: string;
  unlisten?: Promise<(() => Promise<void>) | undefined>;
}

/**
 * SchemaCaches keeps the schema caches of each project, one per exposed schema: introspected on first use, reloaded after a `NOTIFY` on
 * {@linkcode SCHEMA_CHANNEL} (sent by DDL) or an explicit {@linkcode SchemaCaches.invalidate} (after `POST /v1/sql`).
 */
export class SchemaCaches {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;

  /** `exposed`: the exposed schemas, the first the default (PostgREST's `db-schemas`). */
  constructor(readonly exposed: readonly string[] = ["public"]) {}

  /**
   * The cache of schema `schema` (default: the first exposed) of project `ref` whose database is `db`;
   * `exposed`: the project's exposed schemas (default: the platform's).
   */
  async get(
    ref: string,
    db: Db,
    schema: string = this.exposed[0]!,
    exposed: readonly string[] = this.exposed,
  ): Promise<SchemaCache> {
    return (await this.all(ref, db, exposed)).get(schema)!;
  }

  /** The caches of every exposed schema of project `ref`. */
  all(ref: string, db: Db, exposed: readonly string[] = this.exposed): Promise<Map<string, SchemaCache>> {
    const key = exposed.join(",");
    let entry = this.entries.get(ref);
    if (entry && entry.db !== db) {
      this.forget(ref, entry);
      entry = undefined;
    }
    if (!entry) {
      // Listen first, introspect second: DDL committed between the two is then either seen by the
      // introspection or announced to the listener, never missed.
      const listening = db.listen(SCHEMA_CHANNEL, () => this.invalidate(ref)).catch(() => undefined);
      const created: Entry = {
        db,
        cache: listening.then(() => this.load(ref, db, exposed)),
        generation: ++this.generation,
        exposed: key,
      };
      created.unlisten = listening;
      entry = created;
      this.entries.set(ref, entry);
    } else if (entry.generation < 0 || entry.exposed !== key) {
      entry.cache = this.load(ref, db, exposed);
      entry.generation = ++this.generation;
      entry.exposed = key;
    }
    return entry.cache;
  }

  private load(ref: string, db: Db, exposed: readonly string[]): Promise<Map<string, SchemaCache>> {
    const loading = Promise.all(exposed.map((schema) => introspect(db, schema)))
      .then((caches) => new Map(caches.map((c) => [c.schema, c])));
    loading.catch((err) => {
      log.warn("schema cache load failed", { project: ref, cause: (err as Error).name });
      // Mark it stale so that the next request tries again (at worst one needless reload).
      const entry = this.entries.get(ref);
      if (entry && entry.db === db) entry.generation = -1;
    });
    return loading;
  }

  private forget(ref: string, entry: Entry): void {
    this.entries.delete(ref);
    entry.unlisten?.then((unlisten) => unlisten?.()).catch(() => {});
  }

  /** Marks the cache of `ref` stale: the next request reloads it. */
  invalidate(ref: string): void {
    const entry = this.entries.get(ref);
    if (entry) entry.generation = -1;
  }

  /** Reloads now when the cache is older than a second (a table not found may be brand new). */
  async refresh(
    ref: string,
    db: Db,
    schema: string = this.exposed[0]!,
    exposed: readonly string[] = this.exposed,
  ): Promise<SchemaCache> {
    const current = await this.get(ref, db, schema, exposed);
    if (Date.now() - current.loadedAt < MIN_FORCED_RELOAD_MS) return current;
    this.invalidate(ref);
    return await this.get(ref, db, schema, exposed);
  }

  /** Stops listening for every project. */
  async close(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map(async (e) => {
      const unlisten = await e.unlisten;
      await unlisten?.().catch(() => {});
    }));
  }
}
