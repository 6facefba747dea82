import { type PipelineStatement, type Queryable, quoteIdent } from "../../db/driver.ts";
import type { DataIdentity } from "./data.ts";

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
 * The first statement of every data transaction, all transaction-local: the caller's role, its JWT claims, the
 * timeout, the request's method, path, headers and cookies; `response.headers` and `response.status` are
 * emptied so that a value a function left on the session cannot reach another request's answer.
 */
const SETUP_SQL = "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), " +
  "set_config('statement_timeout', $3, true), set_config('request.method', $4, true), " +
  "set_config('request.path', $5, true), set_config('request.headers', $6, true), " +
  "set_config('request.cookies', $7, true), set_config('response.headers', '', true), " +
  "set_config('response.status', '', true)";

/** The same, with `Prefer: timezone` (a text of its own: the common one stays as it is prepared). */
const SETUP_TIMEZONE_SQL = `${SETUP_SQL}, set_config('timezone', $8, true)`;

/** The statement that starts a data transaction as `identity` for `request` (see SETUP_SQL). */
export function transactionSetup(
  identity: DataIdentity,
  statementTimeoutMs: number,
  request: RequestContext = identity.request ?? NO_REQUEST,
): PipelineStatement {
  const params = [
    identity.role,
    JSON.stringify(identity.claims),
    String(statementTimeoutMs),
    request.method,
    request.path,
    JSON.stringify(request.headers),
    JSON.stringify(request.cookies),
  ];
  if (request.timezone === undefined) return { sql: SETUP_SQL, params };
  return { sql: SETUP_TIMEZONE_SQL, params: [...params, request.timezone] };
}

/** The last statement of every data transaction: what its SQL set for the answer (empty: nothing). */
export const RESPONSE_SETTINGS: PipelineStatement = {
  sql: "select current_setting('response.headers', true) as headers, " +
    "current_setting('response.status', true) as status",
  params: [],
};

/** A project's stored data settings: null takes the platform's default. */
export interface StoredDataSettings {
  schemas: string[] | null;
  aggregates: boolean | null;
  plan: boolean | null;
  server_timing: boolean | null;
  pre_request: string | null;
}

const NONE: StoredDataSettings = {
  schemas: null,
  aggregates: null,
  plan: null,
  server_timing: null,
  pre_request: null,
};

/** The SQL of `platform.project_data_settings` in the control database. */
export const dataSettingsStore = {
  /** The settings `ref` stored; every field null when it stored none. */
  async find(db: Queryable, ref: string): Promise<StoredDataSettings> {
    const [row] = await db.query<StoredDataSettings & { schemas: unknown }>(
      "select schemas, aggregates, plan, server_timing, pre_request from platform.project_data_settings " +
        "where project_ref = $1",
      [ref],
    );
    if (!row) return { ...NONE };
    // jsonb arrives parsed on PostgreSQL and as text on some drivers.
    const schemas = typeof row.schemas === "string" ? JSON.parse(row.schemas) : row.schemas;
    return { ...row, schemas: Array.isArray(schemas) ? schemas : null };
  },

  /** Writes every field of `s` (null resets one to the default). */
  async save(db: Queryable, ref: string, s: StoredDataSettings): Promise<void> {
    await db.query(
      `insert into platform.project_data_settings
         (project_ref, schemas, aggregates, plan, server_timing, pre_request)
       values ($1, $2::text::jsonb, $3, $4, $5, $6)
       on conflict (project_ref) do update set schemas = excluded.schemas, aggregates = excluded.aggregates,
         plan = excluded.plan, server_timing = excluded.server_timing, pre_request = excluded.pre_request,
         updated_at = now()`,
      [
        ref,
        s.schemas === null ? null : JSON.stringify(s.schemas),
        s.aggregates,
        s.plan,
        s.server_timing,
        s.pre_request,
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
