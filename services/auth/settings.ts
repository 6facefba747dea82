import type { Queryable } from "../../db/driver.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import type { RedirectSettings } from "./redirects.ts";
import { authSettingsStore, type StoredAuthSettings } from "./store.ts";

/** A change of a project's auth settings, field by field; null resets a field to the platform's default. */
export type AuthSettingsPatch = Partial<StoredAuthSettings>;

// Another instance sees a change within this time; the instance that made it, at once.
const CACHE_MS = 10_000;

/** AuthSettingsService reads and changes the per-project auth URL settings, cached per project. */
export class AuthSettingsService {
  private readonly cache = new TtlCache<string, Promise<RedirectSettings>>({
    ttlMs: CACHE_MS,
    maxEntries: 10_000,
  });

  /** `defaults.siteUrl`: the platform's public address, or none. */
  constructor(private readonly control: Queryable, readonly defaults: { siteUrl: string | null }) {}

  /** The settings of project `ref` in force: its own values over the platform's defaults. */
  resolve(ref: string): Promise<RedirectSettings> {
    let settings = this.cache.get(ref);
    if (!settings) {
      settings = authSettingsStore.find(this.control, ref).then((s) => ({
        siteUrl: s.site_url ?? this.defaults.siteUrl,
        redirectUrls: s.redirect_urls ?? [],
      }));
      this.cache.set(ref, settings);
      settings.catch(() => this.cache.delete(ref));
    }
    return settings;
  }

  /** Applies `patch` to project `ref`'s settings and returns them in force; this instance sees them at once. */
  async update(ref: string, patch: AuthSettingsPatch): Promise<RedirectSettings> {
    const current = await authSettingsStore.find(this.control, ref);
    await authSettingsStore.save(this.control, ref, {
      site_url: patch.site_url !== undefined ? patch.site_url : current.site_url,
      redirect_urls: patch.redirect_urls !== undefined ? patch.redirect_urls : current.redirect_urls,
    });
    this.cache.delete(ref);
    return await this.resolve(ref);
  }
}
