import type { Queryable } from "../../db/driver.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import { dataSettingsStore, type StoredDataSettings } from "./store.ts";

/** A project's data settings, resolved: its own values over the platform's defaults. */
export interface DataSettings {
  /** The exposed schemas, the first the default (PostgREST's db-schemas). */
  schemas: readonly string[];
  /** Aggregate functions in `select` (PostgREST's db-aggregates-enabled). */
  aggregates: boolean;
  /** `application/vnd.pgrst.plan` answers (PostgREST's db-plan-enabled). */
  plan: boolean;
  /** The `Server-Timing` header on answers (PostgREST's server-timing-enabled). */
  serverTiming: boolean;
  /** A function run before every request, in its transaction (PostgREST's db-pre-request); none by default. */
  preRequest?: string | null;
}

/** A change of a project's data settings, field by field; null resets a field to the platform's default. */
export type DataSettingsPatch = Partial<StoredDataSettings>;

// Another instance sees a change within this time; the instance that made it, at once.
const CACHE_MS = 10_000;

/** DataSettingsService reads and changes the per-project data settings, cached per project. */
export class DataSettingsService {
  private readonly cache = new TtlCache<string, Promise<DataSettings>>({
    ttlMs: CACHE_MS,
    maxEntries: 10_000,
  });

  constructor(private readonly control: Queryable, readonly defaults: DataSettings) {}

  /** The settings of project `ref`: cached, so a request pays for them once every few seconds at most. */
  resolve(ref: string): Promise<DataSettings> {
    let settings = this.cache.get(ref);
    if (!settings) {
      settings = dataSettingsStore.find(this.control, ref).then((s) => this.over(s));
      this.cache.set(ref, settings);
      settings.catch(() => this.cache.delete(ref));
    }
    return settings;
  }

  /** What project `ref` stored itself (null: the default applies). */
  async stored(ref: string): Promise<StoredDataSettings> {
    return await dataSettingsStore.find(this.control, ref);
  }

  /** Applies `patch` to project `ref`'s settings and returns them resolved; this instance sees them at once. */
  async update(ref: string, patch: DataSettingsPatch): Promise<DataSettings> {
    const current = await dataSettingsStore.find(this.control, ref);
    const next: StoredDataSettings = {
      schemas: patch.schemas !== undefined ? patch.schemas : current.schemas,
      aggregates: patch.aggregates !== undefined ? patch.aggregates : current.aggregates,
      plan: patch.plan !== undefined ? patch.plan : current.plan,
      server_timing: patch.server_timing !== undefined ? patch.server_timing : current.server_timing,
      pre_request: patch.pre_request !== undefined ? patch.pre_request : current.pre_request,
    };
    await dataSettingsStore.save(this.control, ref, next);
    this.cache.delete(ref);
    return await this.resolve(ref);
  }

  private over(s: StoredDataSettings): DataSettings {
    return {
      schemas: s.schemas?.length ? s.schemas : this.defaults.schemas,
      aggregates: s.aggregates ?? this.defaults.aggregates,
      plan: s.plan ?? this.defaults.plan,
      serverTiming: s.server_timing ?? this.defaults.serverTiming,
      preRequest: s.pre_request,
    };
  }
}
