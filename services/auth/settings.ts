import { ProjectSettings, type SettingsSource } from "../projects/settings.ts";
import type { RedirectSettings } from "./redirects.ts";
import { authSettingsStore, type StoredAuthSettings } from "./store.ts";

/** The per-project auth URL settings; `defaults.siteUrl` is the platform's public address, or none. */
export function authSettings(
  source: SettingsSource,
  defaults: { siteUrl: string | null },
): ProjectSettings<StoredAuthSettings, RedirectSettings> {
  return new ProjectSettings(source, authSettingsStore, (s): RedirectSettings => ({
    siteUrl: s.site_url ?? defaults.siteUrl,
    redirectUrls: s.redirect_urls ?? [],
  }));
}
