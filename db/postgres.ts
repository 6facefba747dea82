import postgres from "postgres";
import type { Db, PipelineOptions, PipelineStatement, Queryable } from "./driver.ts";

type Sql = postgres.Sql | postgres.TransactionSql;

function wrap(sql: Sql): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []) {
      return await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[]) as unknown as T[];
    },
    async exec(text: string) {
      await sql.unsafe(text);
    },
    async execRows(text: string) {
      const result = await sql.unsafe(text) as unknown as postgres.RowList<postgres.Row[]>;
      // One statement gives one row list; several give a list of row lists.
      const lists = result.length > 0 && Array.isArray(result[0])
        ? result as unknown as postgres.RowList<postgres.Row[]>[]
        : [result];
      const last = lists.findLast((l) => (l.columns?.length ?? 0) > 0);
      return last ? [...last] : [];
    },
  };
}

function serializeJson(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Options of {@linkcode openPostgres}. */
export interface PostgresOptions {
  /** Connections in the pool. */
  max: number;
  /** Seconds an idle connection is kept. */
  idleTimeout?: number;
}

/**
 * The most distinct statement texts a pool prepares for {@linkcode Db.pipeline}: every connection keeps each one
 * until it is recycled (postgres.js has no eviction), so the bound caps the server memory that many query shapes
 * could take. Texts beyond it run unnamed (one more round trip to describe them).
 */
const MAX_PREPARED_TEXTS = 256;

/** Opens a pooled PostgreSQL connection through postgres.js. */
export function openPostgres(url: string, options: PostgresOptions): Db {
  const sql = postgres(url, {
    max: options.max,
    idle_timeout: options.idleTimeout ?? 60,
    onnotice: () => {},
    // A string given for a json/jsonb parameter is JSON text already (as PGlite takes it): do not encode it twice.
    types: {
      json: { to: 114, from: [114], serialize: serializeJson, parse: JSON.parse },
      jsonb: { to: 3802, from: [3802], serialize: serializeJson, parse: JSON.parse },
    },
    transform: { undefined: null },
    connection: { application_name: "platform" },
  });
  const base = wrap(sql);
  const prepared = new Set<string>();
  const admit = (text: string) =>
    prepared.has(text) || (prepared.size < MAX_PREPARED_TEXTS && prepared.add(text) !== undefined);
  return {
    kind: "postgres",
    query: base.query,
    exec: base.exec,
    execRows: base.execRows,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return await sql.begin((tx) => fn(wrap(tx))) as T;
    },
    async pipeline(statements: PipelineStatement[], { end, readOnly }: PipelineOptions) {
      // One reserved connection; postgres.js writes queries issued without awaiting in one batch, so BEGIN, the
      // statements and a fixed COMMIT reach the server together. A COMMIT after a failed statement rolls back.
      const conn = await sql.reserve();
      try {
        const sent = [
          conn.unsafe(readOnly ? "begin read only" : "begin"),
          ...statements.map((s) =>
            conn.unsafe(s.sql, s.params as postgres.ParameterOrJSON<never>[], {
              prepare: admit(s.sql),
              simple: false,
            } as postgres.UnsafeQueryOptions)
          ),
        ];
        if (typeof end === "string") sent.push(conn.unsafe(end));
        const settled = await Promise.allSettled(sent);
        const failed = settled.find((r) => r.status === "rejected");
        if (failed) {
          if (typeof end !== "string") await conn.unsafe("rollback").catch(() => {});
          throw failed.reason;
        }
        const rows = settled.slice(1, 1 + statements.length).map((r) =>
          [...(r as PromiseFulfilledResult<postgres.Row[]>).value] as Record<string, unknown>[]
        );
        if (typeof end === "string") return rows;
        let decision: "commit" | "rollback";
        try {
          decision = end(rows);
        } catch (err) {
          await conn.unsafe("rollback").catch(() => {});
          throw err;
        }
        await conn.unsafe(decision === "commit" ? "commit" : "rollback");
        return rows;
      } finally {
        conn.release();
      }
    },
    async listen(channel, onPayload) {
      const sub = await sql.listen(channel, onPayload);
      return () => sub.unlisten();
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
