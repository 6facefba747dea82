import postgres from "postgres";
import type { Db, Queryable } from "./driver.ts";

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
  return {
    kind: "postgres",
    query: base.query,
    exec: base.exec,
    execRows: base.execRows,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return await sql.begin((tx) => fn(wrap(tx))) as T;
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
