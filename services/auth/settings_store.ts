import type { Queryable } from "../../db/driver.ts";

/** A project's stored auth settings: null takes the platform's default. */
export interface StoredAuthSettings {
  site_url: string | null;
  redirect_urls: string[] | null;
}

/** The SQL of `platform.project_auth_settings` in the control database. */
export const authSettingsStore = {
  /** The settings `ref` stored; every field null when it stored none. */
  async find(db: Queryable, ref: string): Promise<StoredAuthSettings> {
    const [row] = await db.query<{ site_url: string | null; redirect_urls: unknown }>(
      "select site_url, redirect_urls from platform.project_auth_settings where project_ref = $1",
      [ref],
    );
    if (!row) return { site_url: null, redirect_urls: null };
    // jsonb arrives parsed on PostgreSQL and as text on some drivers.
    const urls = typeof row.redirect_urls === "string" ? JSON.parse(row.redirect_urls) : row.redirect_urls;
    return { site_url: row.site_url, redirect_urls: Array.isArray(urls) ? urls : null };
  },

  /** Writes every field of `s` (null resets one to the default). */
  async save(db: Queryable, ref: string, s: StoredAuthSettings): Promise<void> {
    await db.query(
      `insert into platform.project_auth_settings (project_ref, site_url, redirect_urls)
       values ($1, $2, $3::text::jsonb)
       on conflict (project_ref) do update set site_url = excluded.site_url,
         redirect_urls = excluded.redirect_urls, updated_at = now()`,
      [ref, s.site_url, s.redirect_urls === null ? null : JSON.stringify(s.redirect_urls)],
    );
  },
};
