import type { Databases } from "../../db/databases.ts";
import type { Db, PipelineOptions, PipelineStatement } from "../../db/driver.ts";
import type { RoleSettings, SchemaCache } from "../../db/rest/schema.ts";
import { byteString } from "../../lib/encoding.ts";
import { errors } from "../../lib/errors.ts";
import { Compiler, type Statement } from "../../db/rest/compile.ts";
import { RestError, restErrors } from "../../lib/rest_errors.ts";
import type { Node, ParsedQuery } from "../../db/rest/ast.ts";
import { parseQuery } from "../../db/rest/parse.ts";
import { openApiCatalog, openApiDocument, type OpenApiServer } from "../../db/rest/openapi.ts";
import {
  bodyArguments,
  chooseFunction,
  queryArguments,
  RAW_BODY_TYPES,
  splitRpcQuery,
  takesOnlyWholeBody,
} from "../../db/rest/rpc.ts";
import { contentLocation } from "./content_location.ts";
import { type HandlerLookup, handlerLookup, type Media, negotiate, negotiateOpenApi } from "./media.ts";
import { fromDatabaseError } from "./pg_errors.ts";
import { appliedPreferences, checkStrict, parsePrefer, type Preferences } from "./prefer.ts";
import { type SqlResponse, sqlResponse } from "./response_settings.ts";
import { SchemaCaches } from "./schema_caches.ts";
import { type DataSettings, dataSettings } from "./settings.ts";
import { callGucs, DEFAULT_HOISTED, type RequestGucs, roleGucs } from "./request_settings.ts";
import type { OpenApiMode } from "./store.ts";
import {
  CONSTRAINTS_IMMEDIATE,
  preRequestCall,
  type RequestContext,
  RESPONSE_SETTINGS,
  searchPath,
  timeoutReset,
  transactionSetup,
} from "./store.ts";

/** The database role a data request runs as, and the JWT claims its policies read. */
export interface DataIdentity {
  role: "anon" | "authenticated" | "service_role";
  claims: Record<string, unknown>;
  /** The HTTP request, for its SQL (`request.method`, `request.headers`…); absent: empty settings. */
  request?: DataExchange;
}

/** One request's context: what its SQL reads, and what the engine notes about it for the answer. */
export interface DataExchange extends RequestContext {
  /** Set by the engine: what the request's SQL asked of the answer (`response.headers`, `response.status`). */
  response?: SqlResponse;
  /** Set by the engine: milliseconds spent in database round trips. */
  transactionMs?: number;
  /** Set by the engine: the project's pre-request function, called after the setup statement. */
  preRequest?: string | null;
}

/** A data API request, already authenticated; the same for both mounts. */
export interface DataRequest {
  method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
  table: string;
  search: URLSearchParams;
  prefer?: string | null;
  range?: string | null;
  /** `Accept`: `application/vnd.pgrst.object+json` asks for one object instead of an array. */
  accept?: string | null;
  /** The parsed JSON body of POST, PUT and PATCH. */
  body?: unknown;
  /** Refuse PATCH and DELETE without a filter (400 21000), as pg-safeupdate does; PostgREST allows them. */
  requireFilter?: boolean;
  /** What a write returns when `Prefer: return=` is absent (PostgREST: minimal; the envelope: representation). */
  defaultReturn: "minimal" | "representation";
  /** PostgREST's content negotiation (`/rest/v1`): an `Accept` nothing matches is 406 PGRST107. */
  negotiate?: boolean;
  /** The raw query string, for `Content-Location`. */
  rawQuery?: string;
  /** `Accept-Profile` (GET, HEAD) or `Content-Profile` (writes): the exposed schema asked for. */
  profile?: string | null;
}

/** A function call (RPC), already authenticated; the same for both mounts. */
export interface RpcRequest {
  method: "GET" | "HEAD" | "POST";
  fn: string;
  search: URLSearchParams;
  prefer?: string | null;
  range?: string | null;
  accept?: string | null;
  /**
   * The body of POST: parsed JSON or CSV rows (`{}` when empty); for a `text/plain`, `text/xml` or
   * `application/octet-stream` body its text (bytes: `\x` hex).
   */
  body?: unknown;
  /** The body's media type (POST); absent: JSON. */
  contentType?: string;
  /** The fields of an `application/x-www-form-urlencoded` body: arguments as text, as a GET's query. */
  form?: Map<string, string[]>;
  /** PostgREST's content negotiation (`/rest/v1`): an `Accept` nothing matches is 406 PGRST107. */
  negotiate?: boolean;
  /** `Accept-Profile` (GET, HEAD) or `Content-Profile` (POST): the exposed schema asked for. */
  profile?: string | null;
}

/** The answer of the engine: a status, a JSON body text (null for none) and headers. The mount serializes. */
export interface DataResult {
  status: number;
  body: string | null;
  headers: Record<string, string>;
  /** True when the body is one object (`Accept: application/vnd.pgrst.object+json`). */
  singular: boolean;
  /** The media type the body is written as. */
  media?: Media;
  /** Headers the request's SQL set (`response.headers`): each replaces the header of its name; in order. */
  sqlHeaders?: [string, string][];
  /** Milliseconds the engine spent, when the project enables `Server-Timing`. */
  timing?: { plan: number; transaction: number };
}

/** Limits of the data API. */
export interface DataLimits {
  /** The most rows a request returns (PostgREST's db-max-rows). */
  maxRows: number;
  /** Milliseconds a statement may run. */
  statementTimeoutMs: number;
  /** The exposed schemas, the first the default (PostgREST's db-schemas); `["public"]` when absent. */
  schemas?: readonly string[];
  /** Platform-wide defaults of the per-project settings of the same names (false when absent). */
  aggregates?: boolean;
  /**
   * `Accept: application/vnd.pgrst.plan` answers the request's EXPLAIN (PostgREST's db-plan-enabled); off, it
   * is 406 PGRST107. A plan exposes the schema's statistics and indexes, so it is off by default.
   */
  plan?: boolean;
  serverTiming?: boolean;
  /** Default of the projects' `openapi_mode` (PostgREST's openapi-mode; `follow-privileges` when absent). */
  openapiMode?: OpenApiMode;
  /** Default of the projects' `openapi_security_active` (false when absent). */
  openapiSecurityActive?: boolean;
  /** Default of the projects' `hoisted_tx_settings` (PostgREST's default when absent). */
  hoistedTxSettings?: readonly string[];
}

/** The schema a request runs against, and whether it was negotiated (then the answer names it). */
interface Profile {
  schema: string;
  negotiated: boolean;
}

const OBJECT_MEDIA = "application/vnd.pgrst.object+json";

/** The catalog's role settings of a schema cache that holds none. */
const NO_ROLE_SETTINGS: RoleSettings = {};

/** The media type of an answer: negotiated on `/rest/v1`; on `/v1/db` JSON, one object when asked for. */
function mediaOf(
  accept: string | null | undefined,
  strict: boolean | undefined,
  plan?: boolean,
  handlers?: HandlerLookup,
): Media {
  if (strict) return negotiate(accept, { plan, handlers });
  const object = (accept ?? "").toLowerCase().includes(OBJECT_MEDIA);
  return {
    kind: object ? "object" : "json",
    stripNulls: /;\s*nulls=stripped/i.test(accept ?? ""),
    contentType: "application/json; charset=utf-8",
  };
}

export { transactionSetup }; // the bare-server benchmark starts its transactions the same way

/**
 * DataService is the engine of the data API: parse (PostgREST grammar) → compile against the schema cache →
 * run one statement in one transaction as the caller's role with `request.jwt.claims` set, so RLS applies.
 */
export class DataService {
  /** The schema caches of every project, one per exposed schema. */
  readonly schemas: SchemaCaches;
  /** The per-project data settings (exposed schemas, aggregates, plans, Server-Timing, role and app settings). */
  readonly settings: ReturnType<typeof dataSettings>;
  /** The transaction settings of each role, by the catalog's role settings and the project's settings. */
  private readonly gucs = new WeakMap<RoleSettings, WeakMap<DataSettings, Map<string, RequestGucs>>>();
  /** The names `pg_timezone_names` lists, read once (every project database has the same). */
  private timezones?: Promise<Set<string>>;

  constructor(private readonly dbs: Databases, private readonly limits: DataLimits) {
    this.schemas = new SchemaCaches(limits.schemas?.length ? limits.schemas : ["public"]);
    this.settings = dataSettings(dbs, {
      schemas: this.schemas.exposed,
      aggregates: limits.aggregates ?? false,
      plan: limits.plan ?? false,
      serverTiming: limits.serverTiming ?? false,
      openapiMode: limits.openapiMode ?? "follow-privileges",
      openapiSecurityActive: limits.openapiSecurityActive ?? false,
      hoistedTxSettings: new Set((limits.hoistedTxSettings ?? DEFAULT_HOISTED).map((n) => n.toLowerCase())),
    });
  }

  /** The platform's default exposed schemas, the first the default. */
  get exposed(): readonly string[] {
    return this.schemas.exposed;
  }

  /**
   * The schema `profile` (`Accept-Profile`/`Content-Profile`) selects among those project `ref` exposes, as
   * PostgREST chooses it: none → the first exposed (negotiated when several are exposed); one not exposed →
   * 406 PGRST106.
   */
  async profile(ref: string, header: string | null | undefined): Promise<Profile> {
    const exposed = (await this.settingsOf(ref)).schemas;
    // A header sent twice reads as its first value, as PostgREST looks a header up (fetch joins them with ", ").
    const profile = header?.split(", ", 1)[0];
    if (profile === undefined || profile === null) {
      return { schema: exposed[0]!, negotiated: exposed.length > 1 };
    }
    if (!exposed.includes(profile)) throw restErrors.unacceptableSchema(profile, [...exposed]);
    return { schema: profile, negotiated: true };
  }

  /** The data settings of project `ref` (cached): its own values over the platform's defaults. */
  async settingsOf(ref: string): Promise<DataSettings> {
    try {
      return await this.settings.resolve(ref);
    } catch (err) {
      throw errors.unavailable("The platform database is unavailable", err);
    }
  }

  /**
   * The tenant pool, schema cache and settings of `ref`; the cache reloads (at most once a second) when `has`
   * is false. Requests run on the tenant pool (never a superuser's session); the cache reads the catalog on
   * the platform's.
   */
  private async open(
    ref: string,
    has: (cache: SchemaCache) => boolean,
    schema?: string,
  ): Promise<{ db: Db; cache: SchemaCache; settings: DataSettings }> {
    const settings = await this.settingsOf(ref);
    const exposed = settings.schemas;
    schema ??= exposed[0]!;
    try {
      const [internal, db] = await Promise.all([this.dbs.project(ref), this.dbs.tenant(ref)]);
      let cache = await this.schemas.get(ref, internal, schema, exposed);
      if (!has(cache)) cache = await this.schemas.refresh(ref, internal, schema, exposed);
      return { db, cache, settings };
    } catch (err) {
      throw errors.unavailable("The project database is unavailable", err);
    }
  }

  /**
   * The request's `Prefer`, as PostgREST v14 reads it: a `timezone` the database does not name exactly (as
   * `pg_timezone_names` spells it) is not applied, and counts as an invalid preference (PGRST122 when strict).
   */
  private async preferences(ref: string, header: string | null | undefined): Promise<Preferences> {
    const prefer = parsePrefer(header);
    if (prefer.timezone === undefined) return prefer;
    this.timezones ??= (async () => {
      const db = await this.dbs.project(ref);
      const rows = await db.query<{ name: string }>("select name from pg_catalog.pg_timezone_names");
      return new Set(rows.map((r) => r.name));
    })();
    this.timezones.catch(() => this.timezones = undefined);
    if (!(await this.timezones).has(prefer.timezone)) {
      // Every `timezone=` of the header is then invalid, listed in the header's order with the others.
      const invalid = new Set(prefer.invalid);
      prefer.invalid = header!.split(",").map((p) => p.trim())
        .filter((p) => invalid.has(p) || p.startsWith("timezone="));
      prefer.timezone = undefined;
    }
    return prefer;
  }

  /**
   * The transaction settings of `identity`'s role in a project with `settings` whose catalog `cache` read:
   * its role settings (the catalog's under the project's), `app.settings.*` and the search path of the cache's
   * schema, worked out once per role and schema.
   */
  private gucsOf(settings: DataSettings, cache: SchemaCache, identity: DataIdentity): RequestGucs {
    const catalog = cache.roleSettings ?? NO_ROLE_SETTINGS;
    let bySettings = this.gucs.get(catalog);
    if (!bySettings) this.gucs.set(catalog, bySettings = new WeakMap());
    let byRole = bySettings.get(settings);
    if (!byRole) bySettings.set(settings, byRole = new Map());
    const key = `${identity.role}\0${cache.schema}`;
    let gucs = byRole.get(key);
    if (!gucs) {
      gucs = roleGucs({
        platformMs: this.limits.statementTimeoutMs,
        catalog: catalog[identity.role],
        project: settings.roleSettings[identity.role],
        app: settings.appSettings,
      });
      gucs.searchPath = searchPath(cache.schema);
      byRole.set(key, gucs);
    }
    return gucs;
  }

  /**
   * Runs `statements` in one transaction, sent in one go, after the caller's role, claims, timeout, request
   * context and `gucs`, and before the read of what its SQL set for the answer (noted on `identity.request`).
   */
  private async pipeline(
    db: Db,
    identity: DataIdentity,
    statements: Statement[],
    options: PipelineOptions & { gucs: RequestGucs; explain?: boolean; rollback?: boolean },
  ): Promise<Record<string, unknown>[][]> {
    const { gucs, explain, rollback, ...pipelineOptions } = options;
    const setup = transactionSetup(identity, gucs);
    // One prepared statement per role: PostgreSQL rewrites and plans a statement again whenever the role that
    // runs it changes (row security is per role), so anon and signed-in requests sharing one would each undo
    // the other's plan. The role is one of three fixed names.
    const own = statements.map((st) => ({ sql: `/* ${identity.role} */ ${st.sql}`, params: st.params }));
    const preRequest = identity.request?.preRequest;
    // The statements that run the project's SQL, the timeout set again before each after the first; the last
    // statement (RESPONSE_SETTINGS) reads settings with pg_catalog's functions only.
    const tenant = preRequest ? [preRequestCall(preRequest), ...own] : own;
    const sent: PipelineStatement[] = [setup];
    const ownAt: number[] = [];
    tenant.forEach((st, i) => {
      if (i > 0) sent.push(timeoutReset(gucs));
      if (i >= tenant.length - own.length) ownAt.push(sent.length);
      sent.push(st);
    });
    // `Prefer: tx=rollback` still fails on a deferred constraint, as PostgREST: it checks them before rolling back.
    // `rollback` says so when a function decides the end after a check.
    if ((options.end === "rollback" || rollback) && !explain) sent.push(CONSTRAINTS_IMMEDIATE);
    sent.push(RESPONSE_SETTINGS);
    const ownRows = (rows: Record<string, unknown>[][]) => ownAt.map((i) => rows[i]!);
    const started = performance.now();
    let results: Record<string, unknown>[][];
    try {
      // A check before the transaction ends sees the setup and the caller's statements, as without the extras.
      const end = options.end;
      results = await db.pipeline(sent, {
        ...pipelineOptions,
        end: typeof end === "function" ? (rows) => end([rows[0]!, ...ownRows(rows)]) : end,
        timeoutMs: gucs.timeoutMs,
        isolation: gucs.isolation,
      });
    } catch (err) {
      throw namedAsPostgrest(fromDatabaseError(err, identity.role), statements);
    } finally {
      const exchange = identity.request;
      if (exchange) exchange.transactionMs = (exchange.transactionMs ?? 0) + performance.now() - started;
    }
    const response = sqlResponse(results.at(-1)?.[0]);
    if (identity.request) identity.request.response = response;
    return ownRows(results);
  }

  /** The answer as the request's SQL asked (`response.headers`, `response.status`), timed when enabled. */
  private async finish(ref: string, identity: DataIdentity, result: DataResult, started: number) {
    const exchange = identity.request;
    const response = exchange?.response;
    if (response?.status !== undefined) result.status = response.status;
    if (response?.headers.length) result.sqlHeaders = response.headers;
    if (exchange && (await this.settingsOf(ref)).serverTiming) {
      const transaction = exchange.transactionMs ?? 0;
      result.timing = { plan: Math.max(0, performance.now() - started - transaction), transaction };
    }
    return result;
  }

  /**
   * The EXPLAIN of a request's statement (`Accept: application/vnd.pgrst.plan`), in the format and with the
   * options asked for. `analyze` runs the statement: the transaction always rolls back, so an explained write is
   * never kept.
   */
  private async explain(
    db: Db,
    identity: DataIdentity,
    st: Statement,
    media: Media,
    o: { readOnly: boolean; gucs: RequestGucs },
  ): Promise<DataResult> {
    const { format, options } = media.plan!;
    const explain = `explain (${[`format ${format}`, ...options].join(", ")}) ${st.sql}`;
    const [rows] = await this.pipeline(db, identity, [{ sql: explain, params: st.params }], {
      end: "rollback",
      explain: true,
      ...o,
    });
    const lines = rows!.map((r) => r["QUERY PLAN"]);
    // The drivers read a JSON plan as a value: written back with PostgreSQL's indentation, one line each.
    const body = lines.map((l) => typeof l === "string" ? l : JSON.stringify(l, null, 2)).join("\n") + "\n";
    return { status: 200, body, headers: {}, singular: false, media };
  }

  /** Runs one data request for project `ref`, in the schema its profile selects. */
  async execute(ref: string, identity: DataIdentity, req: DataRequest): Promise<DataResult> {
    const started = performance.now();
    const profile = await this.profile(ref, req.profile);
    if (identity.request) identity.request.preRequest = (await this.settingsOf(ref)).preRequest;
    const write = req.method !== "GET" && req.method !== "HEAD";
    const result = withProfile(await this.executeIn(profile.schema, ref, identity, req), profile, write);
    return await this.finish(ref, identity, result, started);
  }

  private async executeIn(
    schema: string,
    ref: string,
    identity: DataIdentity,
    req: DataRequest,
  ): Promise<DataResult> {
    const query = parseQuery(req.search);
    // PostgREST refuses a paged PUT before it reads the body or looks the table up.
    if (req.method === "PUT" && hasRange(query.nodes.get("")!)) throw restErrors.putRange();
    if (req.table.includes("\0")) throw restErrors.unknownTable(req.table.replaceAll("\0", ""), schema);
    const { db, cache, settings } = await this.open(ref, (c) => c.tables.has(req.table), schema);
    const gucs = this.gucsOf(settings, cache, identity);
    const prefer = await this.preferences(ref, req.prefer);
    if (identity.request) identity.request.timezone = prefer.timezone;
    const compiler = new Compiler(cache, query);
    const table = compiler.table(req.table);
    const media = mediaOf(
      req.accept,
      req.negotiate,
      settings.plan,
      handlerLookup(cache.mediaHandlers, { relation: table.name }, defaultSelect(query)),
    );
    checkStrict(prefer);
    const singular = media.kind === "object";
    // HEAD runs no handler (PostgREST: no aggregate on HEAD), yet answers its Content-Type.
    compiler.handler = req.method === "HEAD" ? undefined : media.handler;
    compiler.stripNulls = media.stripNulls;
    compiler.csv = media.kind === "csv";
    compiler.aggregatesEnabled = settings.aggregates;
    const applied: string[] = [];
    const pipeline = (statements: Statement[], options: PipelineOptions & { rollback?: boolean }) =>
      this.pipeline(db, identity, statements, { ...options, gucs });
    const end = prefer.tx === "rollback" ? "rollback" : "commit";
    const headers = (extra: Record<string, string>) => withApplied(extra, applied);

    if (req.method === "GET" || req.method === "HEAD") {
      // The Range header counts for GET only (RFC 9110), as in PostgREST.
      const root = applyRange(query, req.method === "GET" ? req.range : null);
      applied.push(...appliedPreferences(prefer, "read"));
      // Reads run read only, as PostgREST runs GET and HEAD: they end with the statements, checks come after.
      const read = { end, readOnly: true } as const;
      if (media.kind === "plan") {
        const st = compiler.read(table.name, {
          count: prefer.count === "exact",
          maxRows: this.limits.maxRows,
        });
        return this.explain(db, identity, st, media, { readOnly: true, gucs });
      }
      let total: number | null = null;
      const exact = prefer.count === "exact";
      let results: Record<string, unknown>[][];
      if (prefer.count === "planned" || prefer.count === "estimated") {
        const plan = new Compiler(cache, query).plan(req.table);
        if (prefer.count === "estimated") {
          // PostgREST's rule: the rows are counted up to the row cap and one more; within the cap that count is
          // exact, past it the planner's estimate is the total when it is the greater.
          const max = this.limits.maxRows;
          const st = compiler.read(table.name, { count: true, countUpTo: max + 1, maxRows: max });
          const [planRowsOf, rows] = await pipeline([plan, st], read);
          const counted = Number((rows![0] as unknown as ReadRow).total);
          total = counted > max ? Math.max(planRows(planRowsOf!), counted) : counted;
          results = [rows!];
        } else {
          const st = compiler.read(table.name, { count: false, maxRows: this.limits.maxRows });
          const [planRowsOf, rows] = await pipeline([plan, st], read);
          total = planRows(planRowsOf!);
          results = [rows!];
        }
      } else {
        results = await pipeline(
          [compiler.read(table.name, { count: exact, maxRows: this.limits.maxRows })],
          read,
        );
      }
      const row = results[0]![0] as unknown as ReadRow;
      if (exact) total = Number(row.total);
      const result = readResult(row, {
        offset: root.offset ?? 0,
        total,
        singular,
        head: req.method === "HEAD",
        applied,
        postgrest: req.negotiate === true,
      });
      if (req.rawQuery !== undefined) {
        result.headers["content-location"] = contentLocation(table.name, req.rawQuery);
      }
      result.media = media;
      return result;
    }

    const ret = prefer.return ?? req.defaultReturn;
    const representation = ret === "representation";
    // The platform's own route refuses a body that is no row; PostgREST's reads it as none.
    const strictBody = !req.negotiate;
    let st: Statement;
    if (req.method === "POST") {
      const rows = insertRows(req.body, query.columns !== undefined, strictBody);
      const hasKey = table.primaryKey.length > 0 || req.search.has("on_conflict");
      applied.push(...appliedPreferences(prefer, "insert", hasKey));
      st = compiler.insert(table.name, {
        rows,
        resolution: prefer.resolution,
        missingDefault: prefer.missing === "default",
        representation,
        location: ret === "headers-only",
      });
    } else if (req.method === "PUT") {
      st = compiler.put(table.name, payloadRows(req.body, strictBody), { representation });
      applied.push(...appliedPreferences(prefer, "upsert"));
    } else if (req.method === "PATCH") {
      st = compiler.update(table.name, patchValues(req.body, query.columns !== undefined, strictBody), {
        representation,
        requireFilter: req.requireFilter,
        missingDefault: prefer.missing === "default",
      });
      applied.push(...appliedPreferences(prefer, "update"));
    } else {
      st = compiler.delete(table.name, { representation, requireFilter: req.requireFilter });
      applied.push(...appliedPreferences(prefer, "delete"));
    }
    // `limit` and `offset` on POST, PATCH and DELETE change nothing on `/rest/v1` (PostgREST v14 dropped limited
    // writes); the platform's own route refuses them rather than write more rows than a reader would think. A
    // PUT's were refused first.
    const put = req.method === "PUT";
    const root = query.nodes.get("")!;
    if (strictBody && !put && (root.limit !== undefined || root.offset !== undefined)) {
      throw restErrors.parse("limit and offset apply to reads only", "filter the rows to change instead");
    }
    if (media.kind === "plan") return this.explain(db, identity, st, media, { readOnly: false, gucs });
    const strict = prefer.handling === "strict" && prefer.maxAffected !== undefined &&
      (req.method === "PATCH" || req.method === "DELETE");
    /** Checks the affected rows (throws when one fails) and shapes the answer. */
    const answer = (rows: Record<string, unknown>[]): DataResult => {
      const row = rows[0] as {
        page_total: string;
        body: string | null;
        location: string | null;
        inserted?: string | null;
      };
      const n = Number(row.page_total);
      // A PUT writes exactly one row, the one its filters name: anything else is rolled back.
      if (put && n !== 1) throw restErrors.putMismatch();
      if (strict && n > prefer.maxAffected!) throw restErrors.maxAffected(n);
      // Asking for one object checks the rows written, whatever comes back (PostgREST: also with return=minimal).
      if (singular && n !== 1) throw restErrors.singular(n);
      // PostgREST: POST and DELETE write `*/total`, PATCH `0-(n-1)/total`, PUT none; the total with
      // count=exact|estimated.
      const total = counts(prefer) ? String(n) : "*";
      const extra: Record<string, string> = {};
      if (!put) {
        extra["content-range"] = req.method === "PATCH" && n > 0 ? `0-${n - 1}/${total}` : `*/${total}`;
      }
      if (req.method === "POST" && ret === "headers-only" && n === 1 && row.location) {
        extra.location = locationOf(table.name, row.location);
      }
      return {
        status: writeStatus(req.method, {
          representation,
          merge: prefer.resolution === "merge-duplicates",
          // Rows inserted rather than updated: tallied for a merge; otherwise every row is new.
          inserted: row.inserted === undefined || row.inserted === null ? n : Number(row.inserted),
        }),
        body: representation ? (singular ? row.body!.slice(1, -1) : row.body) : null,
        headers: headers(extra),
        singular,
        media,
      };
    };
    if (!strict && !put && !singular) {
      // No check can fail: the transaction ends with the statement, in the same round trip.
      const [rows] = await pipeline([st], { end });
      return answer(rows!);
    }
    // A check sees the affected rows before the transaction ends: failing it rolls the write back.
    let result: DataResult | undefined;
    await pipeline([st], {
      end: ([, rows]) => {
        result = answer(rows!);
        return end;
      },
      rollback: end === "rollback",
    });
    return result!;
  }

  /**
   * Calls a function of project `ref` (RPC), as the caller's role under RLS: `POST` with the arguments in the
   * body, `GET`/`HEAD` with them in the query (read only). A set-returning result is filtered, ordered, paged
   * and shaped by the rest of the query, as a table read is.
   */
  async call(ref: string, identity: DataIdentity, req: RpcRequest): Promise<DataResult> {
    const started = performance.now();
    const profile = await this.profile(ref, req.profile);
    if (identity.request) identity.request.preRequest = (await this.settingsOf(ref)).preRequest;
    const result = withProfile(await this.callIn(profile.schema, ref, identity, req), profile);
    return await this.finish(ref, identity, result, started);
  }

  private async callIn(
    schema: string,
    ref: string,
    identity: DataIdentity,
    req: RpcRequest,
  ): Promise<DataResult> {
    const post = req.method === "POST";
    const { args, rest } = post
      ? { args: new Map<string, string[]>(), rest: req.search }
      : splitRpcQuery(req.search);
    const query = parseQuery(rest);
    if (req.fn.includes("\0")) throw restErrors.unknownTable(req.fn.replaceAll("\0", ""), schema);
    const { db, cache, settings } = await this.open(ref, (c) => c.functions.has(req.fn), schema);
    const prefer = await this.preferences(ref, req.prefer);
    if (identity.request) identity.request.timezone = prefer.timezone;
    checkStrict(prefer);
    let body = post ? req.body : undefined;
    const columns = jsonColumns(req, query.columns);
    const shape = {
      keys: post ? (req.form ? [...req.form.keys()] : columns ?? bodyKeys(body)) : [...args.keys()],
      singleObject: post && prefer.params === "single-object",
      post,
      mime: post ? req.contentType : undefined,
    };
    const raw = post && req.contentType !== undefined && req.contentType in RAW_BODY_TYPES;
    // A body that is not an object (or an array of objects) can only be a json/jsonb parameter whole. Else
    // PostgREST v14 refuses an array of other values, and reads any other value as no argument.
    if (post && !raw && !req.form && !isArguments(body) && !takesOnlyWholeBody(cache, req.fn, shape)) {
      if (Array.isArray(body)) throw restErrors.body("All object keys must match");
      if (!req.negotiate) {
        throw restErrors.body(
          "Invalid body",
          "the body of a function call must be a JSON object of its arguments",
        );
      }
      body = {};
    }
    const fn = chooseFunction(cache, req.fn, shape);
    // `max-affected` under `handling=strict` counts a set's rows; a function of one value has none to count.
    const maxAffected = prefer.handling === "strict" ? prefer.maxAffected : undefined;
    if (maxAffected !== undefined && !fn.result.set) throw restErrors.maxAffectedRpc();
    const callArgs = !post
      ? queryArguments(fn, args)
      : req.form
      ? queryArguments(fn, req.form)
      : bodyArguments(fn, shape, body, columns);
    // A function returning a table's rows answers with that table's handlers; another with its own name's (not
    // a set of the domain: PostgREST's handlers answer a single value).
    const media = mediaOf(
      req.accept,
      req.negotiate,
      settings.plan,
      handlerLookup(
        cache.mediaHandlers,
        fn.result.table !== null
          ? { relation: fn.result.table }
          : { returns: fn.result.set ? undefined : fn.result.oid },
        defaultSelect(query),
      ),
    );
    const applied = appliedPreferences(
      { ...prefer, count: prefer.count === "exact" ? "exact" : undefined },
      "call",
    );
    const root = applyRange(query, req.method === "GET" ? req.range : null);
    const compiler = new Compiler(cache, query);
    // HEAD runs no handler (PostgREST: no aggregate on HEAD), yet answers its Content-Type.
    compiler.handler = req.method === "HEAD" ? undefined : media.handler;
    compiler.stripNulls = media.stripNulls;
    compiler.csv = media.kind === "csv";
    compiler.aggregatesEnabled = settings.aggregates;
    const exact = prefer.count === "exact";
    const st = compiler.call(fn, callArgs, { count: exact, maxRows: this.limits.maxRows });
    // The function's hoisted settings (`set statement_timeout …`) over the role's, for the whole transaction.
    const gucs = callGucs(
      this.gucsOf(settings, cache, identity),
      fn,
      this.limits.statementTimeoutMs,
      settings.hoistedTxSettings,
    );
    if (media.kind === "plan") return this.explain(db, identity, st, media, { readOnly: !post, gucs });
    const end = prefer.tx === "rollback" ? "rollback" : "commit";
    // Asking for one object checks a set's size before the transaction ends: a function that wrote other
    // than one row is rolled back, as in PostgREST. A single row is one object already.
    const wantsObject = media.kind === "object";
    const checkOne = wantsObject && fn.result.set && fn.result.kind !== "void";
    // GET and HEAD run read only, as in PostgREST: a function that writes is 405 there, and callable by POST.
    const [rows] = await this.pipeline(db, identity, [st], {
      end: checkOne || maxAffected !== undefined
        ? ([, own]) => {
          const n = Number((own![0] as unknown as ReadRow).page_total);
          if (maxAffected !== undefined && n > maxAffected) throw restErrors.maxAffected(n);
          if (checkOne && n !== 1) throw restErrors.singular(n);
          return end;
        }
        : end,
      rollback: end === "rollback",
      readOnly: !post,
      gucs,
    });
    const row = rows![0] as unknown as ReadRow;
    // A call answers its result whatever `return=` asks (PostgREST v14 reads that preference for writes only);
    // a void one answers 204 with the range of its one empty row.
    if (fn.result.kind === "void") {
      const range = `0-0/${exact ? Number(row.total) : "*"}`;
      return {
        status: 204,
        body: null,
        headers: withApplied({ "content-range": range }, applied),
        singular: false,
      };
    }
    const result = readResult(row, {
      offset: root.offset ?? 0,
      total: exact ? Number(row.total) : null,
      singular: wantsObject && fn.result.set,
      head: req.method === "HEAD",
      applied,
      postgrest: req.negotiate === true,
    });
    if (wantsObject && fn.result.kind === "composite") result.singular = true;
    result.media = media;
    return result;
  }

  /**
   * The `Allow` header of `OPTIONS` on a table or view (what it takes; PUT with a primary key) or a function
   * (a volatile one is POST only); 404 PGRST205 / PGRST202 when there is none of that name.
   */
  async allowedMethods(
    ref: string,
    target: { table: string } | { fn: string; search?: URLSearchParams },
    profile?: string | null,
  ): Promise<string> {
    const { schema } = await this.profile(ref, profile);
    if ("fn" in target) {
      const { cache } = await this.open(ref, (c) => c.functions.has(target.fn), schema);
      // The function a GET with this query would call, as PostgREST resolves it for OPTIONS (PGRST202 when none).
      const { args } = splitRpcQuery(target.search ?? new URLSearchParams());
      const fn = chooseFunction(cache, target.fn, {
        keys: [...args.keys()],
        singleObject: false,
        post: false,
      });
      return fn.volatility === "v" ? "OPTIONS,POST" : "OPTIONS,GET,HEAD,POST";
    }
    const { cache } = await this.open(ref, (c) => c.tables.has(target.table), schema);
    const t = new Compiler(cache, parseQuery(new URLSearchParams())).table(target.table);
    return [
      "OPTIONS,GET,HEAD",
      ...(t.insertable ? ["POST"] : []),
      ...(t.insertable && t.updatable && t.primaryKey.length > 0 ? ["PUT"] : []),
      ...(t.updatable ? ["PATCH"] : []),
      ...(t.deletable ? ["DELETE"] : []),
    ].join(",");
  }

  /**
   * 404 PGRST126 when project `ref`'s OpenAPI root is disabled (PostgREST's `openapi-mode = disabled`, which
   * refuses the root resource before anything else of the request is looked at).
   */
  async checkOpenApi(ref: string): Promise<void> {
    if ((await this.settingsOf(ref)).openapiMode === "disabled") throw restErrors.openApiDisabled();
  }

  /**
   * PostgREST's OpenAPI root: the Swagger 2.0 document of the schema `profile` selects, as the caller's role
   * sees it (the tables it holds a privilege on, the functions it may execute), or with `ignore-privileges`
   * every table, view and function of the schema; `disabled`: 404 PGRST126. `Accept`: `*\/*`,
   * `application/openapi+json` or `application/json` (answered as `application/openapi+json`, as PostgREST
   * does); anything else is 406 PGRST107.
   */
  async openApi(
    ref: string,
    identity: DataIdentity,
    req: { profile?: string | null; accept?: string | null; server: OpenApiServer },
  ): Promise<DataResult> {
    const started = performance.now();
    await this.checkOpenApi(ref);
    const settings = await this.settingsOf(ref);
    const profile = await this.profile(ref, req.profile);
    const media = negotiateOpenApi(req.accept);
    const { cache } = await this.open(ref, () => true, profile.schema);
    let catalog;
    const querying = performance.now();
    try {
      catalog = await openApiCatalog(await this.dbs.project(ref), profile.schema, identity.role, {
        ignorePrivileges: settings.openapiMode === "ignore-privileges",
      });
    } catch (err) {
      throw errors.unavailable("The project database is unavailable", err);
    }
    const transaction = performance.now() - querying;
    const body = JSON.stringify(
      openApiDocument(cache, catalog, req.server, { security: settings.openapiSecurityActive }),
    );
    const result = withProfile({
      status: 200,
      body,
      headers: {},
      singular: true,
      media,
    }, profile);
    // Server-Timing as for the other answers: the catalog's query is the transaction, the rest the plan.
    if (settings.serverTiming) {
      result.timing = { plan: Math.max(0, performance.now() - started - transaction), transaction };
    }
    return result;
  }

  /** Forgets the schema cache of `ref` (after DDL through `POST /v1/sql`). */
  schemaChanged(ref: string): void {
    this.schemas.invalidate(ref);
  }

  /** Stops listening for schema changes. */
  async close(): Promise<void> {
    await this.schemas.close();
  }
}

/** PostgREST's `hasDefaultSelect`: no `select=`, or `select=*` alone (only then a resource's own handlers apply). */
function defaultSelect(query: ParsedQuery): boolean {
  return query.select.length === 1 && query.select[0]!.kind === "star";
}

/** The answer of a negotiated schema names it in `Content-Profile`, as PostgREST's does. */
/**
 * A database error whose message names one of the statements' aliases (`column "_0.id" must appear in the GROUP
 * BY clause…`), told with the relation PostgREST's SQL has there (`books`, `authors_1`).
 */
function namedAsPostgrest(err: unknown, statements: Statement[]): unknown {
  if (!(err instanceof RestError)) return err;
  let message = err.message;
  for (const st of statements) {
    for (const [alias, name] of st.names ?? []) {
      message = message.replace(new RegExp(`(?<![\\w$])${alias.slice(1, -1)}\\.`, "g"), () => `${name}.`);
    }
  }
  if (message === err.message) return err;
  const { details, hint, headers, cause } = err;
  return new RestError(err.status, err.code, message, { details, hint, headers, cause });
}

/**
 * `Content-Profile` with the schema negotiated (or any schema when several are exposed), on answers that carry a
 * content type: not on a write without its representation (`write`), nor on a void call (PostgREST v14).
 */
function withProfile(result: DataResult, profile: Profile, write = false): DataResult {
  const bodiless = write ? result.body === null : result.status === 204;
  if (profile.negotiated && !bodiless) {
    result.headers = { ...result.headers, "content-profile": profile.schema };
  }
  return result;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** Whether a call's body names its arguments: an object, or an array of objects (one call each). */
function isArguments(body: unknown): boolean {
  return isObject(body) || (Array.isArray(body) && body.every(isObject));
}

/**
 * The argument names of a call's body: an object's keys, or those of an array's objects, which must all have
 * the same keys (PostgREST: 400 PGRST102 "All object keys must match").
 */
/**
 * The `columns=` of a call with a JSON body: PostgREST then takes the body as is, and these names (not its keys)
 * choose the function and are its arguments. Other bodies (form, CSV, raw) keep their own keys.
 */
function jsonColumns(req: RpcRequest, columns: string[] | undefined): string[] | undefined {
  const json = req.method === "POST" && !req.form &&
    (req.contentType ?? "application/json") === "application/json";
  return json && columns !== undefined ? [...new Set(columns)] : undefined;
}

function bodyKeys(body: unknown): string[] {
  if (isObject(body)) return Object.keys(body);
  if (!Array.isArray(body) || body.length === 0 || !body.every(isObject)) return [];
  const keys = Object.keys(body[0]!).sort();
  const same = (o: Record<string, unknown>) => {
    const k = Object.keys(o).sort();
    return k.length === keys.length && k.every((x, i) => x === keys[i]);
  };
  if (!body.every(same)) throw restErrors.body("All object keys must match");
  return keys;
}

/** Parses `Range: 0-9` (items); PostgREST ignores a header that is not `from-[to]`. */
function parseRange(header: string | null | undefined): { offset: number; limit?: number } | null {
  if (!header) return null;
  const m = /^(\d{1,15})-(\d{0,15})$/.exec(header);
  if (!m) return null;
  const offset = Number(m[1]);
  if (m[2] === "") return { offset };
  const to = Number(m[2]);
  if (to < offset) throw restErrors.lowerGtUpper();
  return { offset, limit: to - offset + 1 };
}

/** True when the preferred count puts a total in `Content-Range` (exact or estimated, as PostgREST). */
function counts(p: Preferences): boolean {
  return p.count === "exact" || p.count === "estimated";
}

/**
 * The root's page, as PostgREST's getRanges computes it: the intersection of the `Range` header (all rows when
 * absent) and `limit`/`offset`; `limit=0` bypasses the header. A negative offset thus reads from the first row,
 * and an intersection with no row is 416 ("Limit should be…", PostgREST's wording). Returns the root node.
 */
function applyRange(query: ParsedQuery, header: string | null | undefined): Node {
  const root = query.nodes.get("")!;
  if (root.limit === 0) return root;
  const range = parseRange(header) ?? { offset: 0 };
  const from = root.offset ?? 0;
  const lower = Math.max(range.offset, from);
  const upper = Math.min(
    root.limit === undefined ? Infinity : from + root.limit - 1,
    range.limit === undefined ? Infinity : range.offset + range.limit - 1,
  );
  if (upper < lower) throw restErrors.negativeLimit();
  if (lower !== 0 || root.offset !== undefined) root.offset = lower;
  if (upper !== Infinity) root.limit = upper - lower + 1;
  return root;
}

function withApplied(extra: Record<string, string>, applied: string[]): Record<string, string> {
  if (applied.length > 0) extra["preference-applied"] = applied.join(", ");
  return extra;
}

/** The one row of a compiled read: the page size, the body, and the total when counted. */
interface ReadRow {
  page_total: string;
  body: string;
  total?: string;
}

/**
 * The answer to a read: 206 for a partial page of a known total, 416 past its end, 406 when not singular. On
 * `/rest/v1` (`postgrest`) the 416 is an answer, not an error, as PostgREST v14 builds it: the error's JSON as
 * its body, with the read's headers (`Content-Range: *\/total`, `Content-Location`, `Preference-Applied`).
 */
function readResult(
  row: ReadRow,
  o: {
    offset: number;
    total: number | null;
    singular: boolean;
    head: boolean;
    applied: string[];
    postgrest: boolean;
  },
): DataResult {
  const n = Number(row.page_total);
  const { offset, total } = o;
  // PostgREST's rangeStatusHeader: 416 past the total, 206 for fewer rows than the total, else 200.
  if (total !== null && offset > total) {
    const e = restErrors.outOfBounds(offset, total);
    if (!o.postgrest) throw e;
    const body = JSON.stringify({ code: e.code, message: e.message, details: e.details, hint: e.hint });
    return {
      status: 416,
      body: o.head ? null : body,
      headers: withApplied({ "content-range": `*/${total}` }, o.applied),
      singular: false,
    };
  }
  if (o.singular && n !== 1) throw restErrors.singular(n);
  const partial = total !== null && n < total;
  const range = n > 0 && total !== 0 ? `${offset}-${offset + n - 1}` : "*";
  return {
    status: partial ? 206 : 200,
    body: o.head ? null : o.singular ? row.body.slice(1, -1) : row.body,
    headers: withApplied({ "content-range": `${range}/${total ?? "*"}` }, o.applied),
    singular: o.singular,
  };
}

/** The planner's row estimate from the rows of `explain (format json)`. */
function planRows([row]: Record<string, unknown>[]): number {
  let plan = row?.["QUERY PLAN"];
  if (typeof plan === "string") plan = JSON.parse(plan);
  const rows = (plan as { Plan?: { "Plan Rows"?: number } }[] | undefined)?.[0]?.Plan?.["Plan Rows"];
  return typeof rows === "number" ? rows : 0;
}

/** True when a node has a `limit`, or an `offset` other than 0 (PostgREST's range is then not the whole). */
function hasRange(node: Node): boolean {
  return node.limit !== undefined || (node.offset ?? 0) !== 0;
}

/** True when every item is an object with the keys of the first, as PostgREST requires of a bulk body. */
function uniformKeys(items: unknown[]): boolean {
  const first = items[0];
  if (items.length === 0) return true;
  if (!isObject(first)) return false;
  const keys = Object.keys(first);
  return items.every((v) =>
    isObject(v) && Object.keys(v).length === keys.length && keys.every((k) => k in v)
  );
}

/**
 * The rows of a JSON body as PostgREST v14 reads them: an object is one row; an array holds objects with the keys
 * of the first (else 400 PGRST102 `All object keys must match`); any other value is no row. `strict` (`/v1/db`):
 * a value that is neither is 400 `Invalid body` instead.
 */
function payloadRows(body: unknown, strict: boolean): Record<string, unknown>[] {
  if (isObject(body)) return [body];
  if (Array.isArray(body)) {
    if (!uniformKeys(body)) throw restErrors.body("All object keys must match");
    return body as Record<string, unknown>[];
  }
  if (strict) throw restErrors.body("Invalid body", "the body must be a JSON object or an array of objects");
  return [];
}

/**
 * The rows of a POST body (see {@linkcode payloadRows}). With `columns=` the rows need not share keys: keys not
 * listed are ignored and listed ones a row lacks are null (their default with `missing=default`).
 */
function insertRows(body: unknown, listed: boolean, strict: boolean): Record<string, unknown>[] {
  if (!listed) return payloadRows(body, strict);
  const rows = Array.isArray(body) ? body : [body];
  if (!rows.every(isObject)) {
    throw restErrors.body("Invalid body", "the body must be a JSON object or an array of objects");
  }
  return rows;
}

/**
 * The values a PATCH sets, as PostgREST reads its body: an object, or an array of objects with the same keys
 * whose first sets every row (PostgREST updates from the array as a row source; each row takes the first);
 * `[]`, `[{}]` and `{}` set nothing, and change no row.
 */
function patchValues(body: unknown, listed: boolean, strict: boolean): Record<string, unknown> {
  return insertRows(body, listed, strict)[0] ?? {};
}

/**
 * The status of a write, as PostgREST gives it: POST 201, or 200 for `resolution=merge-duplicates` when no row
 * was inserted (every one updated); PUT 201 when it inserted, 200 when it updated (204 without a body);
 * PATCH and DELETE 200 with a body, 204 without.
 */
function writeStatus(
  method: DataRequest["method"],
  o: { representation: boolean; merge: boolean; inserted: number },
): number {
  if (method === "POST") return o.merge && o.inserted <= 0 ? 200 : 201;
  if (!o.representation) return 204;
  if (method === "PUT") return o.inserted > 0 ? 201 : 200;
  return 200;
}

/** Percent-encodes as a query string component the way PostgREST does: all but `A-Za-z0-9-_.~`. */
function queryEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * `Location` of an inserted row: `/{table}?{pk}=eq.{value}` for each primary key column in column order
 * (`is.null` for a null), from the `[[column, text]]` the statement returns.
 */
function locationOf(table: string, pk: string): string {
  const pairs = JSON.parse(pk) as [string, string | null][];
  // The table's name as its UTF-8 bytes, as PostgREST writes it (a header holds bytes).
  return `/${byteString(new TextEncoder().encode(table))}?` +
    pairs.map(([k, v]) => `${queryEncode(k)}=${queryEncode(v === null ? "is.null" : `eq.${v}`)}`).join("&");
}
