import { ProjectSettings, type SettingsSource } from "../projects/settings.ts";
import { hoistedSettingProblem } from "./request_settings.ts";
import { dataSettingsStore, type OpenApiMode, type StoredDataSettings } from "./store.ts";

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
  /** Settings of the request roles, by role, over the catalog's (PostgREST's impersonated role settings). */
  roleSettings: Partial<Record<string, Record<string, string>>>;
  /** Values read as `current_setting('app.settings.<name>')` on every request (PostgREST's app.settings.*). */
  appSettings: Record<string, string>;
  /** What the OpenAPI root shows (PostgREST's openapi-mode). */
  openapiMode: OpenApiMode;
  /** The OpenAPI document carries the JWT security definition (PostgREST's openapi-security-active). */
  openapiSecurityActive: boolean;
  /**
   * The settings of a called function's `set` clause its whole transaction takes (PostgREST's
   * db-hoisted-tx-settings), lower-case.
   */
  hoistedTxSettings: ReadonlySet<string>;
}

/** The per-project data settings over the platform's defaults (`DATA_*`). */
export function dataSettings(
  source: SettingsSource,
  defaults: Omit<DataSettings, "roleSettings" | "appSettings">,
): ProjectSettings<StoredDataSettings, DataSettings> {
  return new ProjectSettings(source, dataSettingsStore, (s): DataSettings => ({
    schemas: s.schemas?.length ? s.schemas : defaults.schemas,
    aggregates: s.aggregates ?? defaults.aggregates,
    plan: s.plan ?? defaults.plan,
    serverTiming: s.server_timing ?? defaults.serverTiming,
    preRequest: s.pre_request,
    roleSettings: s.role_settings ?? {},
    appSettings: s.app_settings ?? {},
    openapiMode: s.openapi_mode ?? defaults.openapiMode,
    openapiSecurityActive: s.openapi_security_active ?? defaults.openapiSecurityActive,
    hoistedTxSettings: s.hoisted_tx_settings === null ? defaults.hoistedTxSettings : new Set(
      s.hoisted_tx_settings.filter((n) => hoistedSettingProblem(n) === null).map((n) => n.toLowerCase()),
    ),
  }));
}
