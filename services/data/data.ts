import type { Databases } from "../../db/databases.ts";
import type { Db, Queryable } from "../../db/driver.ts";
import type { SchemaCache } from "../../db/rest/schema.ts";
import { errors } from "../errors.ts";
import { Compiler, type Statement } from "../../db/rest/compile.ts";
import { restErrors } from "../../db/rest/errors.ts";
import { parseQuery } from "../../db/rest/parse.ts";
import { fromDatabaseError } from "./pg_errors.ts";
import { parsePrefer } from "./prefer.ts";
import { SchemaCaches } from "./schema_caches.ts";

/** The database role a data request runs as, and the JWT claims its policies read. */
export interface DataIdentity {
  role: "anon" | "authenticated" | "service_role";
  claims: Record<string, unknown>;
}

/** A data API request, already authenticated; the same for both mounts. */
export interface DataRequest {
  method: "GET" | "HEAD" | "POST" | "PATCH" | "DELETE";
  table: string;
  search: URLSearchParams;
  prefer?: string | null;
  range?: string | null;
  /** `Accept`: `application/vnd.pgrst.object+json` asks for one object instead of an array. */
  accept?: string | null;
  /** The parsed JSON body of POST and PATCH. */
  body?: unknown;
  /** What a write returns when `Prefer: return=` is absent (PostgREST: minimal; the envelope: representation). */
  defaultReturn: "minimal" | "representation";
}

/** The answer of the engine: a status, a JSON body text (null for none) and headers. The mount serializes. */
export interface DataResult {
  status: number;
  body: string | null;
  headers: Record<string, string>;
  /** True when the body is one object (`Accept: application/vnd.pgrst.object+json`). */
  singular: boolean;
}

/** Limits of the data API. */
export interface DataLimits {
  /** The most rows a request returns (PostgREST's db-max-rows). */
  maxRows: number;
  /** Milliseconds a statement may run. */
  statementTimeoutMs: number;
}

const OBJECT_MEDIA = "application/vnd.pgrst.object+json";

class Rollback {
  constructor(readonly result: DataResult) {}
}

/**
 * DataService is the engine of the data API: parse (PostgREST grammar) → compile against the schema cache →
 * run one statement in one transaction as the caller's role with `request.jwt.claims` set, so RLS applies.
 */
export class DataService {
  /** The schema caches of every project. */
  readonly schemas = new SchemaCaches();

  constructor(private readonly dbs: Databases, private readonly limits: DataLimits) {}

  /** Runs one data request for project `ref`. */
  async execute(ref: string, identity: DataIdentity, req: DataRequest): Promise<DataResult> {
    const query = parseQuery(req.search);
    if (req.table.includes("\0")) throw restErrors.unknownTable(req.table.replaceAll("\0", ""));
    let db: Db;
    let cache: SchemaCache;
    try {
      db = await this.dbs.project(ref);
      cache = await this.schemas.get(ref, db);
      if (!cache.tables.has(req.table)) cache = await this.schemas.refresh(ref, db);
    } catch (err) {
      throw errors.unavailable("The project database is unavailable", err);
    }
    const prefer = parsePrefer(req.prefer);
    const singular = (req.accept ?? "").toLowerCase().includes(OBJECT_MEDIA);
    const compiler = new Compiler(cache, query);
    compiler.stripNulls = /;\s*nulls=stripped/i.test(req.accept ?? "");
    const table = compiler.table(req.table);
    const applied: string[] = [];
    if (prefer.tx) applied.push(`tx=${prefer.tx}`);

    const run = async (fn: (tx: Queryable) => Promise<DataResult>): Promise<DataResult> => {
      try {
        return await db.transaction(async (tx) => {
          await tx.query(
            "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), " +
              "set_config('statement_timeout', $3, true)",
            [identity.role, JSON.stringify(identity.claims), String(this.limits.statementTimeoutMs)],
          );
          const result = await fn(tx);
          if (prefer.tx === "rollback") throw new Rollback(result);
          return result;
        });
      } catch (err) {
        if (err instanceof Rollback) return err.result;
        throw fromDatabaseError(err, identity.role);
      }
    };
    const headers = (extra: Record<string, string>) => {
      if (applied.length > 0) extra["preference-applied"] = applied.join(", ");
      return extra;
    };

    if (req.method === "GET" || req.method === "HEAD") {
      const root = query.nodes.get("")!;
      const range = parseRange(req.range);
      if (range && root.limit === undefined && root.offset === undefined) {
        root.offset = range.offset;
        if (range.limit !== undefined) root.limit = range.limit;
      }
      if (prefer.count) applied.push(`count=${prefer.count}`);
      return await run(async (tx) => {
        let total: number | null = null;
        let exact = prefer.count === "exact";
        if (prefer.count === "planned" || prefer.count === "estimated") {
          const planned = await planRows(tx, new Compiler(cache, query).plan(req.table));
          if (prefer.count === "estimated" && planned <= this.limits.maxRows) exact = true;
          else total = planned;
        }
        const st = compiler.read(table.name, { count: exact, maxRows: this.limits.maxRows });
        const [row] = await tx.query<{ page_total: string; body: string; total?: string }>(st.sql, st.params);
        const n = Number(row!.page_total);
        if (exact) total = Number(row!.total);
        const offset = root.offset ?? 0;
        if (total !== null && offset > 0 && offset >= total && n === 0) {
          throw restErrors.range(
            `An offset of ${offset} was requested, but there are only ${total} rows`,
            total,
          );
        }
        if (singular && n !== 1) throw restErrors.singular(n);
        const partial = total !== null && n > 0 && (offset > 0 || offset + n < total);
        return {
          status: partial ? 206 : 200,
          body: req.method === "HEAD" ? null : singular ? row!.body.slice(1, -1) : row!.body,
          headers: headers({
            "content-range": `${n === 0 ? "*" : `${offset}-${offset + n - 1}`}/${total ?? "*"}`,
          }),
          singular,
        };
      });
    }

    const ret = prefer.return ?? req.defaultReturn;
    if (prefer.return) applied.push(`return=${prefer.return}`);
    const representation = ret === "representation";
    let st: Statement;
    if (req.method === "POST") {
      const body = req.body;
      const rows = Array.isArray(body) ? body : [body];
      if (rows.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
        throw restErrors.body("Invalid body", "the body must be a JSON object or an array of objects");
      }
      if (prefer.resolution) applied.push(`resolution=${prefer.resolution}`);
      if (prefer.missing === "default") applied.push("missing=default");
      st = compiler.insert(table.name, {
        rows: rows as Record<string, unknown>[],
        resolution: prefer.resolution,
        missingDefault: prefer.missing === "default",
        representation,
      });
    } else if (req.method === "PATCH") {
      const body = req.body;
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw restErrors.body("Invalid body", "the body of PATCH must be a JSON object");
      }
      st = compiler.update(table.name, body as Record<string, unknown>, { representation });
    } else {
      st = compiler.delete(table.name, { representation });
    }
    const root = query.nodes.get("")!;
    if (root.limit !== undefined || root.offset !== undefined) {
      throw restErrors.parse("limit and offset apply to reads only", "filter the rows to change instead");
    }
    if (prefer.count) applied.push(`count=${prefer.count}`);
    if (prefer.handling) applied.push(`handling=${prefer.handling}`);
    if (prefer.maxAffected !== undefined && prefer.handling === "strict") {
      applied.push(`max-affected=${prefer.maxAffected}`);
    }
    return await run(async (tx) => {
      const [row] = await tx.query<{ page_total: string; body: string | null; location: string | null }>(
        st.sql,
        st.params,
      );
      const n = Number(row!.page_total);
      if (
        prefer.handling === "strict" && prefer.maxAffected !== undefined && n > prefer.maxAffected &&
        req.method !== "POST"
      ) {
        throw restErrors.maxAffected(n, prefer.maxAffected);
      }
      if (singular && representation && n !== 1) throw restErrors.singular(n);
      const extra: Record<string, string> = {
        "content-range": req.method === "POST"
          ? `*/${prefer.count ? n : "*"}`
          : `${n === 0 ? "*" : `0-${n - 1}`}/${prefer.count ? n : "*"}`,
      };
      if (req.method === "POST" && ret === "headers-only" && row!.location) {
        const pk = JSON.parse(row!.location) as Record<string, unknown>;
        extra.location = `/${table.name}?` +
          Object.entries(pk).map(([k, v]) => `${encodeURIComponent(k)}=eq.${encodeURIComponent(String(v))}`)
            .join("&");
      }
      const status = req.method === "POST" ? 201 : representation ? 200 : 204;
      return {
        status,
        body: representation ? (singular ? row!.body!.slice(1, -1) : row!.body) : null,
        headers: headers(extra),
        singular,
      };
    });
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

/** Parses `Range: 0-9` (items). */
function parseRange(header: string | null | undefined): { offset: number; limit?: number } | null {
  if (!header) return null;
  const m = /^\s*(?:items=)?(\d{1,15})-(\d{0,15})\s*$/.exec(header);
  if (!m) throw restErrors.parse(`failed to parse Range header (${header})`, "expected from-to, e.g. 0-9");
  const offset = Number(m[1]);
  if (m[2] === "") return { offset };
  const to = Number(m[2]);
  if (to < offset) throw restErrors.range(`The range ${header} ends before it starts`);
  return { offset, limit: to - offset + 1 };
}

async function planRows(tx: Queryable, st: Statement): Promise<number> {
  const [row] = await tx.query<Record<string, unknown>>(st.sql, st.params);
  let plan = row?.["QUERY PLAN"];
  if (typeof plan === "string") plan = JSON.parse(plan);
  const rows = (plan as { Plan?: { "Plan Rows"?: number } }[] | undefined)?.[0]?.Plan?.["Plan Rows"];
  return typeof rows === "number" ? rows : 0;
}
