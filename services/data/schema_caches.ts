import type { ProjectMemos } from "../../db/databases.ts";
import type { Db, Queryable } from "../../db/driver.ts";
import { introspect, type SchemaCache, schemaCachesOfMemo, schemaMemo } from "../../db/rest/schema.ts";
import { log } from "../../lib/log.ts";

/** The channel the project migration 0030 notifies after DDL (an event trigger). */
export const SCHEMA_CHANNEL = "platform_schema";

/** Least time between two reloads forced by an unknown table, so a stream of bad names cannot hammer the catalog. */
const MIN_FORCED_RELOAD_MS = 1000;
// Schema caches are as large as the projects' catalogs (their users' tables and functions): past this much, the
// least recently used projects' caches are dropped (introspected again on their next request).
const MAX_BYTES = 64 * 1048576;

/** Approximate bytes of a project's schema caches: their JSON, Maps as their values. */
function schemaBytes(caches: Map<string, SchemaCache>): number {
  return JSON.stringify([...caches.values()], (_k, v) => v instanceof Map ? [...v.values()] : v).length;
}

interface Entry {
  /** The database the cache describes: a project dropped and created again gets a new one. */
  db: Db;
  /** Every exposed schema's cache, by name, loaded together. */
  cache: Promise<Map<string, SchemaCache>>;
  generation: number;
  /** The exposed schemas the cache holds, joined: a project whose setting changes loads them again. */
  exposed: string;
  /** The same, as a list. */
  schemas: readonly string[];
  unlisten?: Promise<(() => Promise<void>) | undefined>;
  /** Approximate size of the loaded caches (0 while loading). */
  bytes: number;
  /** When it was last asked for, as a count of requests: the least recently used go first. */
  used: number;
}

/**
 * SchemaCaches keeps the schema caches of each project, one per exposed schema: introspected on first use, reloaded after a `NOTIFY` on
 * {@linkcode SCHEMA_CHANNEL} (sent by DDL) or an explicit {@linkcode SchemaCaches.invalidate} (after `POST /v1/sql`).
 * On PGlite they are also what a project's rest file keeps for the next process ({@linkcode ProjectMemos}): the
 * catalog as the database closed, so that its first request after a restart does not wait for the catalog.
 */
export class SchemaCaches implements ProjectMemos {
  private readonly entries = new Map<string, Entry>();
  /**
   * The exposed schemas of each project whose caches {@linkcode close} dropped: the databases close after this,
   * and each one's memo is made for the schemas its requests used.
   */
  private readonly closedSchemas = new Map<string, readonly string[]>();
  private generation = 0;
  private uses = 0;

  /**
   * `exposed`: the exposed schemas, the first the default (PostgREST's `db-schemas`); `maxBytes`: the caches
   * of all projects, approximately.
   */
  constructor(readonly exposed: readonly string[] = ["public"], private readonly maxBytes = MAX_BYTES) {}

  /** Approximate bytes of the loaded caches of every project. */
  get bytes(): number {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.bytes;
    return total;
  }

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
        schemas: exposed,
        bytes: 0,
        used: 0,
      };
      created.unlisten = listening;
      entry = created;
      this.entries.set(ref, entry);
    } else if (entry.generation < 0 || entry.exposed !== key) {
      entry.cache = this.load(ref, db, exposed);
      entry.generation = ++this.generation;
      entry.exposed = key;
      entry.schemas = exposed;
    }
    entry.used = ++this.uses;
    return entry.cache;
  }

  private load(ref: string, db: Db, exposed: readonly string[]): Promise<Map<string, SchemaCache>> {
    const loading = Promise.all(exposed.map((schema) => introspect(db, schema, exposed)))
      .then((caches) => new Map(caches.map((c) => [c.schema, c])));
    loading.then((caches) => this.loaded(ref, db, caches), () => {});
    loading.catch((err) => {
      log.warn("schema cache load failed", { project: ref, cause: (err as Error).name });
      // Mark it stale so that the next request tries again (at worst one needless reload).
      const entry = this.entries.get(ref);
      if (entry && entry.db === db) entry.generation = -1;
    });
    return loading;
  }

  /** Records the size of a project's loaded caches and drops the least recently used others past the bound. */
  private loaded(ref: string, db: Db, caches: Map<string, SchemaCache>): void {
    const entry = this.entries.get(ref);
    if (!entry || entry.db !== db) return;
    entry.bytes = schemaBytes(caches);
    this.bound(ref);
  }

  /** Drops the least recently used caches but `ref`'s while all of them pass the bound. */
  private bound(ref: string): void {
    let total = this.bytes;
    while (total > this.maxBytes) {
      let oldest: [string, Entry] | null = null;
      for (const e of this.entries) {
        if (e[0] !== ref && e[1].bytes > 0 && (!oldest || e[1].used < oldest[1].used)) oldest = e;
      }
      if (!oldest) break; // this project's own caches stay: its request needs them
      this.forget(oldest[0], oldest[1]);
      total -= oldest[1].bytes;
    }
  }

  private forget(ref: string, entry: Entry): void {
    this.entries.delete(ref);
    entry.unlisten?.then((unlisten) => unlisten?.()).catch(() => {});
  }

  /**
   * The memo of project `ref`'s database as it closes: the catalog of the exposed schemas its requests used last
   * (the platform's when none came).
   */
  make(ref: string, q: Queryable): Promise<string> {
    return schemaMemo(q, this.entries.get(ref)?.schemas ?? this.closedSchemas.get(ref) ?? this.exposed);
  }

  /**
   * Project `ref`'s database `db` has just opened with the memo of its last clean close: its caches are taken
   * from it, and its DDL is listened to from now on (the listen is sent before any statement of its callers).
   * A project whose exposed schemas differ from the memo's loads its own on its first request, as usual.
   */
  opened(ref: string, db: Db, memo: string): void {
    const entry = this.entries.get(ref);
    if (entry?.db === db) return;
    const read = schemaCachesOfMemo(memo);
    if (!read) return;
    if (entry) this.forget(ref, entry);
    const unlisten = db.listen(SCHEMA_CHANNEL, () => this.invalidate(ref)).catch(() => undefined);
    this.entries.set(ref, {
      db,
      // Served once listening, as a loaded cache is: DDL from then on is heard.
      cache: unlisten.then(() => read.caches),
      generation: ++this.generation,
      exposed: read.exposed.join(","),
      schemas: read.exposed,
      unlisten,
      // The memo's length: its caches as JSON, about, without making that JSON again.
      bytes: memo.length,
      // Not a use: a periodic check may have opened the database. The least recent until a request asks.
      used: 0,
    });
    this.bound(ref);
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
    for (const [ref, entry] of this.entries) this.closedSchemas.set(ref, entry.schemas);
    this.entries.clear();
    await Promise.all(entries.map(async (e) => {
      const unlisten = await e.unlisten;
      await unlisten?.().catch(() => {});
    }));
  }
}
