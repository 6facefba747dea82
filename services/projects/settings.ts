import type { Queryable } from "../../db/driver.ts";
import type { Databases } from "../../db/databases.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";

/** How one kind of per-project settings is stored in the control database: nullable fields (null: default). */
export interface SettingsStore<S> {
  find(db: Queryable, ref: string): Promise<S>;
  save(db: Queryable, ref: string, settings: S): Promise<void>;
}

// Another instance sees a change within this time; the instance that made it, at once.
const CACHE_MS = 10_000;

/** What settings are read from: the control database, its kind, and each project's generation. */
export type SettingsSource = Pick<Databases, "control" | "kind" | "projectGeneration">;

/**
 * ProjectSettings reads and changes one kind of per-project settings (data, auth): the stored fields of a
 * project, resolved over the platform's defaults by `inForce`, cached per project.
 */
export class ProjectSettings<S extends object, R> {
  private readonly cache: TtlCache<string, { settings: Promise<R>; generation: number }>;

  constructor(
    private readonly source: SettingsSource,
    private readonly store: SettingsStore<S>,
    private readonly inForce: (stored: S) => R,
  ) {
    // On PGlite this process is the only writer of the control database: settings are kept until it changes
    // them (update, or that project created or dropped), so a request after a long rest need not open it.
    this.cache = new TtlCache({ ttlMs: source.kind === "pglite" ? Infinity : CACHE_MS, maxEntries: 10_000 });
  }

  private get control(): Queryable {
    return this.source.control;
  }

  /** The settings of project `ref` in force: cached, so a request pays for them once every few seconds at most. */
  resolve(ref: string): Promise<R> {
    const generation = this.source.projectGeneration(ref);
    const hit = this.cache.get(ref);
    if (hit && hit.generation === generation) return hit.settings;
    const settings = this.store.find(this.control, ref).then(this.inForce);
    const entry = { settings, generation };
    this.cache.set(ref, entry);
    settings.catch(() => {
      if (this.cache.get(ref) === entry) this.cache.delete(ref);
    });
    return settings;
  }

  /**
   * Applies `patch` field by field (an absent field keeps its value, null resets it to the default) and returns
   * the settings in force; this instance sees them at once.
   */
  async update(ref: string, patch: Partial<S>): Promise<R> {
    const next: S = await this.store.find(this.control, ref);
    for (const key of Object.keys(next) as (keyof S)[]) {
      if (patch[key] !== undefined) next[key] = patch[key] as S[keyof S];
    }
    await this.store.save(this.control, ref, next);
    this.cache.delete(ref);
    return await this.resolve(ref);
  }
}
