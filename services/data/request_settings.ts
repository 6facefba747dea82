import type { IsolationLevel } from "../../db/driver.ts";
import type { FunctionInfo } from "../../db/rest/schema.ts";

// The settings a data request's transaction takes beyond its request context, as PostgREST applies them: the
// impersonated role's settings (the catalog's `alter role … set`, then the project's `role_settings`), a called
// function's hoisted settings, then the project's `app_settings` as `app.settings.<name>`.

/** The roles a data request runs as. */
export type RequestRole = "anon" | "authenticated" | "service_role";

/** The request roles, as the project's `role_settings` names them. */
export const REQUEST_ROLES: readonly RequestRole[] = ["anon", "authenticated", "service_role"];

/** The settings a project may give its request roles (`role_settings`), each with the check of its value. */
const ROLE_SETTINGS: Record<string, (value: string) => boolean> = {
  statement_timeout: (v) => durationMs(v) !== null,
  lock_timeout: (v) => durationMs(v) !== null,
  idle_in_transaction_session_timeout: (v) => durationMs(v) !== null,
  default_transaction_isolation: (v) => isolationOf(v) !== undefined,
  "plan_filter.statement_cost_limit": (v) => /^\d{1,15}(\.\d{1,6})?$/.test(v),
};

/** The most `app_settings` a project has, and the longest value of one. */
export const APP_SETTINGS_LIMITS = { count: 100, valueChars: 4096, nameChars: 63 } as const;

/** The most names `hoisted_tx_settings` holds, and the longest name. */
export const HOISTED_LIMITS = { count: 64, nameChars: 127 } as const;

/** PostgREST's default db-hoisted-tx-settings. */
export const DEFAULT_HOISTED: readonly string[] = [
  "statement_timeout",
  "plan_filter.statement_cost_limit",
  "default_transaction_isolation",
];

/** The transaction's own modes: PostgreSQL refuses to change them once the transaction has run a query. */
const TRANSACTION_MODES = new Set([
  "transaction_read_only",
  "transaction_isolation",
  "transaction_deferrable",
]);

/** A setting name as PostgreSQL writes one: an identifier, or dotted identifiers (`plan_filter.x`). */
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}(\.[A-Za-z_][A-Za-z0-9_$]{0,62})*$/;

/**
 * Why `name` cannot be a hoisted setting, or null when it can: a setting name (at most 127 characters), and
 * none of those the platform sets itself on every request (`role`, `session_authorization`, `request.*`,
 * `response.*`), nor the transaction's modes (`transaction_read_only`…), fixed by its first query.
 */
export function hoistedSettingProblem(name: string): string | null {
  if (name.length > HOISTED_LIMITS.nameChars || !SETTING_NAME.test(name)) {
    return `"${name.slice(0, 200)}" is not a setting name`;
  }
  const lower = name.toLowerCase();
  if (
    lower === "role" || lower === "session_authorization" || lower.startsWith("request.") ||
    lower.startsWith("response.")
  ) {
    return `"${name}" is set by the platform on every request`;
  }
  // PostgreSQL takes these only before a transaction's first query, and hoisted settings come after it.
  if (TRANSACTION_MODES.has(lower)) {
    return `"${name}" can only be set before the transaction's first query (a function's own set clause is kept)`;
  }
  return null;
}

/** Why the `role_settings` entry `name` = `value` is refused, or null when a project may set it. */
export function roleSettingProblem(name: string, value: string): string | null {
  const check = Object.hasOwn(ROLE_SETTINGS, name) ? ROLE_SETTINGS[name] : undefined;
  if (!check) return `"${name}" is not a setting a project may give its roles`;
  return check(value) ? null : `"${value}" is not a valid value of "${name}"`;
}

/** True when `name` may follow `app.settings.` (letters, digits and underscores). */
export function appSettingNameValid(name: string): boolean {
  return name.length <= APP_SETTINGS_LIMITS.nameChars && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name);
}

const UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a PostgreSQL duration (`250`, `1.5s`, `2 min`; no unit: milliseconds), or null. */
export function durationMs(text: string): number | null {
  const m = /^\s*(\d{1,12}(?:\.\d{1,6})?)\s*(us|ms|s|min|h|d)?\s*$/.exec(text);
  if (!m) return null;
  return Number(m[1]) * UNITS[m[2] ?? "ms"]!;
}

/** The isolation level a `default_transaction_isolation` value names (read uncommitted runs as read committed). */
export function isolationOf(text: string): IsolationLevel | undefined {
  const level = text.trim().toLowerCase().replace(/\s+/g, " ");
  if (level === "read uncommitted" || level === "read committed") return "read committed";
  if (level === "repeatable read" || level === "serializable") return level;
  return undefined;
}

/** What a request's transaction sets beyond its request context. */
export interface RequestGucs {
  /** `statement_timeout` in milliseconds: the role's or the function's, never past the platform's. */
  timeoutMs: number;
  /** The transaction's isolation level (a `default_transaction_isolation` of the role or the function). */
  isolation?: IsolationLevel;
  /** Set with `set_config(name, value, true)`, in order, after the request context. */
  settings: [string, string][];
  /** The transaction's search path (`"schema", "public", "extensions"`); absent: the one of `public`. */
  searchPath?: string;
}

/** The settings a request role has: the catalog's (`alter role … set`) under the project's own. */
interface Layers {
  /** The platform's statement timeout: the most any setting may give. */
  platformMs: number;
  /** The role's settings in the catalog (pg_db_role_setting), as the schema cache read them. */
  catalog?: Record<string, string>;
  /** The project's `role_settings` for the role. */
  project?: Record<string, string>;
  /** The project's `app_settings`. */
  app?: Record<string, string>;
}

/** The transaction settings of a request role with `layers` (a later layer wins a name). */
export function roleGucs(layers: Layers): RequestGucs {
  // The project's settings were checked when set; checked again, so that no other name ever reaches the SQL.
  const project = Object.entries(layers.project ?? {}).filter(([k, v]) => roleSettingProblem(k, v) === null);
  const merged: Record<string, string> = { ...layers.catalog, ...Object.fromEntries(project) };
  const app = Object.entries(layers.app ?? {}).filter(([k]) => appSettingNameValid(k))
    .map(([k, v]): [string, string] => [`app.settings.${k}`, v]);
  return withSettings({ timeoutMs: layers.platformMs, settings: app }, merged, layers.platformMs);
}

/**
 * The transaction settings of a call of `fn`: its `set` settings named in `hoisted` (PostgREST's
 * db-hoisted-tx-settings) over the role's (`base`); the same object when none applies. Its
 * `default_transaction_isolation` starts the transaction at that level whether hoisted or not, as PostgREST's
 * does (the level of a routine is read apart from its hoisted settings).
 */
export function callGucs(
  base: RequestGucs,
  fn: FunctionInfo,
  platformMs: number,
  hoisted: ReadonlySet<string> = DEFAULT_HOISTED_SET,
): RequestGucs {
  if (!fn.settings?.length) return base;
  const applied = fn.settings.filter(([name]) => hoisted.has(name) && hoistedSettingProblem(name) === null);
  const level = fn.settings.find(([name]) => name === "default_transaction_isolation");
  if (level && !hoisted.has(level[0])) applied.push(level);
  if (applied.length === 0) return base;
  return withSettings(base, Object.fromEntries(applied), platformMs);
}

const DEFAULT_HOISTED_SET: ReadonlySet<string> = new Set(DEFAULT_HOISTED);

/** `base` with `settings` applied: the timeout and isolation taken out, the others set before `base`'s own. */
function withSettings(base: RequestGucs, settings: Record<string, string>, platformMs: number): RequestGucs {
  const result: RequestGucs = { ...base, settings: [] };
  for (const [name, value] of Object.entries(settings)) {
    if (name === "statement_timeout") {
      const ms = durationMs(value);
      // 0 turns the timeout off: the platform's bound stays.
      if (ms !== null) {
        result.timeoutMs = ms > 0 ? Math.max(1, Math.min(platformMs, Math.round(ms))) : platformMs;
      }
    } else if (name === "default_transaction_isolation") {
      const level = isolationOf(value);
      if (level) result.isolation = level;
    } else {
      result.settings.push([name, value]);
    }
  }
  // A name set here replaces the same name set before (app.settings.* never collide with these).
  const names = new Set(result.settings.map(([n]) => n));
  result.settings.push(...base.settings.filter(([n]) => !names.has(n)));
  return result;
}
