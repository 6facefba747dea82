import type { Queryable } from "../../db/driver.ts";
import { ProjectSettings } from "../projects/settings.ts";
import type { RedirectSettings } from "./redirects.ts";
import { authSettingsStore, type StoredAuthSettings } from "./store.ts";

/** The per-project auth URL settings; `defaults.siteUrl` is the platform's public address, or none. */
export function authSettings(
  control: Queryable,
  defaults: { siteUrl: string | null },
): ProjectSettings<StoredAuthSettings, RedirectSettings> {
  return new ProjectSettings(control, authSettingsStore, (s): RedirectSettings => ({
    siteUrl: s.site_url ?? defaults.siteUrl,
    redirectUrls: s.redirect_urls ?? [],
  }));
}
