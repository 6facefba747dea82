import { type PipelineStatement, type Queryable, quoteIdent } from "../../db/driver.ts";
import type { DataIdentity } from "./data.ts";
import type { RequestGucs } from "./request_settings.ts";

// The data API's only hand-written SQL (its transactions' first and last statements, and the projects' data
// settings in the control database); its other statements come from the PostgREST compiler (db/rest/).

/** What a request's SQL may read of the HTTP request, as PostgREST's `request.*` settings. */
export interface RequestContext {
  method: string;
  /** The path below the mount: `/books`, `/rpc/add_them`. */
  path: string;
  /** Header names lower-case; the platform's own console credentials are left out. */
  headers: Record<string, string>;
  cookies: Record<string, string>;
  /** `Prefer: timezone`: the transaction's time zone (absent: the database's). */
  timezone?: string;
}

/** The context of a transaction that no HTTP request started (the bare-server benchmark). */
const NO_REQUEST: RequestContext = { method: "", path: "", headers: {}, cookies: {} };

/**
 * The first statement of every data transaction, all transaction-local: the search path (the request's schema,
 * then EXTRA_SEARCH_PATH), the caller's role, its JWT claims, the timeout, the request's method, path, headers
 * and cookies; `response.headers` and `response.status` are emptied so that a value a function left on the
 * session cannot reach another request's answer.
 */
const SETUP_CALLS = [
  "pg_catalog.set_config('search_path', $10, true)",
  "pg_catalog.set_config('role', $1, true)",
  "pg_catalog.set_config('request.jwt.claims', $2, true)",
  "pg_catalog.set_config('statement_timeout', $3, true)",
  "pg_catalog.set_config('request.method', $4, true)",
  "pg_catalog.set_config('request.path', $5, true)",
  "pg_catalog.set_config('request.headers', $6, true)",
  "pg_catalog.set_config('request.cookies', $7, true)",
  "pg_catalog.set_config('response.headers', '', true)",
  "pg_catalog.set_config('response.status', '', true)",
  "pg_catalog.set_config('platform.jwt_claims', $8, true)",
  "pg_catalog.set_config('platform.jwt_sub', $9, true)",
];

/**
 * The claims' `sub` for `auth.uid()`, and the claims text it was read from (`platform.jwt_claims`): a policy
 * calls `auth.uid()` once per row, and reading the subject from these two settings costs a fraction of parsing
 * the claims' JSON each time. `auth.uid()` takes the shortcut only while `request.jwt.claims` still holds that
 * text, so SQL that sets other claims sees its own subject. A `sub` that is not a string (or absent) is left to
 * the parse: its key matches no claims text.
 */
function subjectOf(claims: Record<string, unknown>, claimsText: string): [key: string, sub: string] {
  const sub = claims.sub;
  return typeof sub === "string" ? [claimsText, sub] : ["-", ""];
}

/** The most arguments a PostgreSQL function takes (FUNC_MAX_ARGS). */
const MAX_ARGS = 100;

/**
 * One statement that makes `calls` in order and answers one small column: `num_nulls` evaluates every argument,
 * in order (a nested call, its last argument, takes the arguments past its limit). The values set, the headers'
 * JSON among them, are then not sent back, read and copied between threads on every request.
 */
function callsInOrder(calls: string[]): string {
  let sql = "";
  for (let i = calls.length; i > 0; i -= MAX_ARGS - 1) {
    const chunk = calls.slice(Math.max(0, i - (MAX_ARGS - 1)), i).join(", ");
    sql = `pg_catalog.num_nulls(${chunk}${sql ? `, ${sql}` : ""})`;
  }
  return `select ${sql} as unset`;
}

/**
 * SETUP_CALLS with `Prefer: timezone` and with `extra` settings after the request's own (the role's, a called
 * function's, `app.settings.*`), names and values as parameters: one text per shape, so each stays prepared.
 */
function setupSql(timezone: boolean, extra: number): string {
  const key = extra * 2 + (timezone ? 1 : 0);
  let sql = SETUP_TEXTS[key];
  if (sql === undefined) {
    const calls = [...SETUP_CALLS];
    if (timezone) calls.push("pg_catalog.set_config('timezone', $11, true)");
    const first = timezone ? 12 : 11;
    for (let i = 0; i < extra; i++) {
      calls.push(`pg_catalog.set_config($${first + 2 * i}, $${first + 2 * i + 1}, true)`);
    }
    sql = callsInOrder(calls);
    if (key < 1000) SETUP_TEXTS[key] = sql;
  }
  return sql;
}
const SETUP_TEXTS: string[] = [];

/**
 * The schemas after the request's own in its search path, as Supabase configures PostgREST's
 * db-extra-search-path: `public`, then `extensions` (where pgvector and the other extensions live).
 */
export const EXTRA_SEARCH_PATH = ["public", "extensions"];

/**
 * The search path of a request to `schema`, as PostgREST sets it: the schema, then EXTRA_SEARCH_PATH, each
 * quoted (`"api", "public", "extensions"`), so a function that names its tables without a schema finds them.
 */
export function searchPath(schema: string): string {
  return [schema, ...EXTRA_SEARCH_PATH].map(quoteIdent).join(", ");
}

/** The statement that starts a data transaction as `identity` for `request` with `gucs` (see SETUP_CALLS). */
export function transactionSetup(
  identity: DataIdentity,
  gucs: RequestGucs,
  request: RequestContext = identity.request ?? NO_REQUEST,
): PipelineStatement {
  const claims = JSON.stringify(identity.claims);
  const params: unknown[] = [
    identity.role,
    claims,
    String(gucs.timeoutMs),
    request.method,
    request.path,
    JSON.stringify(request.headers),
    JSON.stringify(request.cookies),
    ...subjectOf(identity.claims, claims),
    gucs.searchPath ?? searchPath("public"),
  ];
  if (request.timezone !== undefined) params.push(request.timezone);
  for (const [name, value] of gucs.settings) params.push(name, value);
  return { sql: setupSql(request.timezone !== undefined, gucs.settings.length), params };
}

/**
 * The request's statement timeout set again, between two statements that run the project's SQL (a pre-request,
 * the request's own): that SQL can set `statement_timeout` for the statements after it, and PostgreSQL arms each
 * statement's timer from the setting as the statement starts.
 */
export function timeoutReset(gucs: RequestGucs): PipelineStatement {
  return {
    sql: "select pg_catalog.set_config('statement_timeout', $1, true)",
    params: [String(gucs.timeoutMs)],
  };
}

/** The last statement of every data transaction: what its SQL set for the answer (empty: nothing). */
export const RESPONSE_SETTINGS: PipelineStatement = {
  sql: "select pg_catalog.current_setting('response.headers', true) as headers, " +
    "pg_catalog.current_setting('response.status', true) as status",
  params: [],
};

/** Checks the deferred constraints now: a transaction about to roll back would never check them. */
export const CONSTRAINTS_IMMEDIATE: PipelineStatement = { sql: "set constraints all immediate", params: [] };

/** A project's stored data settings: null takes the platform's default. */
export interface StoredDataSettings {
  schemas: string[] | null;
  aggregates: boolean | null;
  plan: boolean | null;
  server_timing: boolean | null;
  pre_request: string | null;
  /** Settings of the request roles, by role (PostgREST's impersonated role settings). */
  role_settings: Partial<Record<string, Record<string, string>>> | null;
  /** Values read as `pg_catalog.current_setting('app.settings.<name>')` (PostgREST's app.settings.*). */
  app_settings: Record<string, string> | null;
  /** PostgREST's openapi-mode: `follow-privileges`, `ignore-privileges` or `disabled`. */
  openapi_mode: OpenApiMode | null;
  /** PostgREST's openapi-security-active. */
  openapi_security_active: boolean | null;
  /** PostgREST's db-hoisted-tx-settings: the function settings a call's whole transaction takes. */
  hoisted_tx_settings: string[] | null;
}

/** What the OpenAPI root shows (PostgREST's openapi-mode). */
export type OpenApiMode = "follow-privileges" | "ignore-privileges" | "disabled";
export const OPENAPI_MODES: readonly OpenApiMode[] = ["follow-privileges", "ignore-privileges", "disabled"];

const NONE: StoredDataSettings = {
  schemas: null,
  aggregates: null,
  plan: null,
  server_timing: null,
  pre_request: null,
  role_settings: null,
  app_settings: null,
  openapi_mode: null,
  openapi_security_active: null,
  hoisted_tx_settings: null,
};

/** A jsonb column as the drivers give it (parsed on PostgreSQL, text on some), or null. */
function jsonColumn(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value ?? null;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** The string fields of an object, or null when it is none. */
function stringRecord(value: unknown): Record<string, string> | null {
  if (!isRecord(value)) return null;
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** The SQL of `platform.project_data_settings` in the control database. */
export const dataSettingsStore = {
  /** The settings `ref` stored; every field null when it stored none. */
  async find(db: Queryable, ref: string): Promise<StoredDataSettings> {
    const [row] = await db.query<Record<keyof StoredDataSettings, unknown>>(
      "select schemas, aggregates, plan, server_timing, pre_request, role_settings, app_settings, " +
        "openapi_mode, openapi_security_active, hoisted_tx_settings from platform.project_data_settings where project_ref = $1",
      [ref],
    );
    if (!row) return { ...NONE };
    const schemas = jsonColumn(row.schemas);
    const roles = jsonColumn(row.role_settings);
    const hoisted = jsonColumn(row.hoisted_tx_settings);
    const mode = row.openapi_mode as OpenApiMode | null;
    return {
      schemas: Array.isArray(schemas) ? schemas : null,
      aggregates: row.aggregates as boolean | null,
      plan: row.plan as boolean | null,
      server_timing: row.server_timing as boolean | null,
      pre_request: row.pre_request as string | null,
      role_settings: isRecord(roles)
        ? Object.fromEntries(Object.entries(roles).map(([role, s]) => [role, stringRecord(s) ?? {}]))
        : null,
      app_settings: stringRecord(jsonColumn(row.app_settings)),
      openapi_mode: mode !== null && OPENAPI_MODES.includes(mode) ? mode : null,
      openapi_security_active: row.openapi_security_active as boolean | null,
      hoisted_tx_settings: Array.isArray(hoisted) ? hoisted.filter((n) => typeof n === "string") : null,
    };
  },

  /** Writes every field of `s` (null resets one to the default). */
  async save(db: Queryable, ref: string, s: StoredDataSettings): Promise<void> {
    await db.query(
      `insert into platform.project_data_settings
         (project_ref, schemas, aggregates, plan, server_timing, pre_request, role_settings, app_settings,
          openapi_mode, openapi_security_active, hoisted_tx_settings)
       values ($1, $2::text::jsonb, $3, $4, $5, $6, $7::text::jsonb, $8::text::jsonb, $9, $10, $11::text::jsonb)
       on conflict (project_ref) do update set schemas = excluded.schemas, aggregates = excluded.aggregates,
         plan = excluded.plan, server_timing = excluded.server_timing, pre_request = excluded.pre_request,
         role_settings = excluded.role_settings, app_settings = excluded.app_settings,
         openapi_mode = excluded.openapi_mode, openapi_security_active = excluded.openapi_security_active,
         hoisted_tx_settings = excluded.hoisted_tx_settings, updated_at = now()`,
      [
        ref,
        s.schemas === null ? null : JSON.stringify(s.schemas),
        s.aggregates,
        s.plan,
        s.server_timing,
        s.pre_request,
        s.role_settings === null ? null : JSON.stringify(s.role_settings),
        s.app_settings === null ? null : JSON.stringify(s.app_settings),
        s.openapi_mode,
        s.openapi_security_active,
        s.hoisted_tx_settings === null ? null : JSON.stringify(s.hoisted_tx_settings),
      ],
    );
  },
};

/** The statement that calls a project's pre-request function (`fn` or `schema.fn`), as PostgREST runs it. */
export function preRequestCall(name: string): PipelineStatement {
  const dot = name.indexOf(".");
  const qualified = dot < 0
    ? quoteIdent(name)
    : `${quoteIdent(name.slice(0, dot))}.${quoteIdent(name.slice(dot + 1))}`;
  return { sql: `select ${qualified}()`, params: [] };
}
