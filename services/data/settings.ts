import type { Queryable } from "../../db/driver.ts";
import { ProjectSettings } from "../projects/settings.ts";
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

/** The per-project data settings over the platform's defaults (`DATA_*`). */
export function dataSettings(
  control: Queryable,
  defaults: DataSettings,
): ProjectSettings<StoredDataSettings, DataSettings> {
  return new ProjectSettings(control, dataSettingsStore, (s): DataSettings => ({
    schemas: s.schemas?.length ? s.schemas : defaults.schemas,
    aggregates: s.aggregates ?? defaults.aggregates,
    plan: s.plan ?? defaults.plan,
    serverTiming: s.server_timing ?? defaults.serverTiming,
    preRequest: s.pre_request,
  }));
}
