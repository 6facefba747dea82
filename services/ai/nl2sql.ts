import type { Databases } from "../../db/databases.ts";
import { quoteIdent, sqlState } from "../../db/driver.ts";
import { AppError, errors } from "../../lib/errors.ts";
import type { ChatMessage, Providers } from "./providers.ts";
import type { TableName } from "./sql_guard.ts";
import { type ColumnRow, nl2sqlStore } from "./store.ts";
import type { UsageLog } from "./usage_log.ts";

/** The database role a query runs as. */
export type SqlRole = "anon" | "authenticated" | "service_role";

/** Who asks: the role and the JWT claims RLS policies read. */
export interface SqlCaller {
  role: SqlRole;
  claims: Record<string, unknown>;
}

/** An NL-to-SQL request (docs/ai.md). */
export interface Nl2SqlRequest {
  question: string;
  examples?: { question: string; sql: string }[];
  /** Rows returned at most when executing (default 100). */
  limit?: number;
  /** Run the SQL and return its rows. */
  execute?: boolean;
  model?: string;
  provider?: string;
}

// Schemas of the platform itself: never offered to the model, whatever the role may read.
const INTERNAL_SCHEMAS = ["pg_catalog", "information_schema", "platform", "auth", "realtime", "extensions"];

/** Rows returned when a request gives no limit. */
export const DEFAULT_ROW_LIMIT = 100;

/**
 * Nl2Sql turns a question into one read-only SELECT: the prompt carries only the tables and
 * columns the caller's role may read; the answer is checked by `checkSelect` (sql_guard.ts); when asked, it runs in
 * a read-only transaction as the caller's role with its JWT claims (so RLS applies), a statement timeout and
 * a row limit.
 */
export class Nl2Sql {
  constructor(
    private readonly deps: {
      dbs: Databases;
      providers: Providers;
      usage: UsageLog;
      /** `statement_timeout` of the run (on PGlite answered at the timeout, not interrupted: docs/data.md). */
      timeoutMs: number;
      /** The planner's estimated cost above which a query is refused before it runs. */
      maxCost: number;
    },
  ) {}

  /** The tables and columns `role` may select, outside the platform's internal schemas. */
  async readableColumns(ref: string, role: SqlRole): Promise<ColumnRow[]> {
    const db = await this.deps.dbs.project(ref);
    return await nl2sqlStore.readableColumns(db, role, INTERNAL_SCHEMAS);
  }

  /** Generates (and optionally runs) the SQL for a question. */
  async ask(ref: string, caller: SqlCaller, req: Nl2SqlRequest, signal?: AbortSignal): Promise<{
    sql: string;
    rows?: Record<string, unknown>[];
  }> {
    const provider = this.deps.providers.get(req.provider);
    const columns = await this.readableColumns(ref, caller.role);
    const tables = new Map<string, { name: TableName; columns: string[] }>();
    for (const c of columns) {
      const key = `${c.schema}.${c.table}`;
      let t = tables.get(key);
      if (!t) tables.set(key, t = { name: { schema: c.schema, name: c.table }, columns: [] });
      t.columns.push(`${quoteIdent(c.column)} ${c.type}`);
    }
    const schemaText = [...tables.values()]
      .map((t) => `table ${quoteIdent(t.name.schema)}.${quoteIdent(t.name.name)} (${t.columns.join(", ")})`)
      .join("\n");
    const messages: ChatMessage[] = [
      {
        role: "system",
        content:
          "You translate questions into exactly one PostgreSQL SELECT statement. Use only these tables:\n" +
          (schemaText || "(no table is readable)") +
          "\nAnswer with the SQL only: no explanation, no code fence. Never write anything but a SELECT.",
      },
    ];
    for (const e of req.examples ?? []) {
      messages.push({ role: "user", content: e.question }, { role: "assistant", content: e.sql });
    }
    messages.push({ role: "user", content: req.question });
    const answer = await provider.chat(
      { model: req.model ?? provider.config.chatModel, messages, temperature: 0 },
      signal,
    );
    this.deps.usage.record(ref, {
      provider: provider.name,
      model: answer.model,
      kind: "nl2sql",
      usage: answer.usage,
    });
    // The SQL parser (about 20 MB once loaded) is read by the first NL-to-SQL call, not at every start.
    const { checkSelect } = await import("./sql_guard.ts");
    const checked = checkSelect(extractSql(answer.content), [...tables.values()].map((t) => t.name));
    if (!req.execute) return { sql: checked.sql };
    const rows = await this.run(ref, caller, checked.sql, req.limit ?? DEFAULT_ROW_LIMIT);
    return { sql: checked.sql, rows };
  }

  /** Runs a checked SELECT read-only, as the caller, with a timeout and a row limit. */
  async run(ref: string, caller: SqlCaller, sql: string, limit: number): Promise<Record<string, unknown>[]> {
    const db = await this.deps.dbs.tenant(ref);
    try {
      return await db.transaction(async (tx) => {
        await nl2sqlStore.actAs(tx, caller.role, caller.claims);
        // The planner's estimate bounds the work before it starts: the embedded PGlite answers the timeout but
        // cannot interrupt a query once it runs (docs/data.md), so the timeout alone would not contain a huge
        // join there.
        return await nl2sqlStore.select(tx, sql, limit, (plan) => {
          const cost = planCost(plan);
          if (cost > this.deps.maxCost) {
            throw errors.validation(
              `Generated SQL refused: its estimated cost ${
                Math.round(cost)
              } is above the bound ${this.deps.maxCost}`,
            );
          }
        });
      }, { timeoutMs: this.deps.timeoutMs, prepare: false });
    } catch (err) {
      throw sqlFailure(err, this.deps.timeoutMs);
    }
  }
}

/** The SQL inside a model's answer: the content of a code fence if any, without a trailing semicolon. */
export function extractSql(content: string): string {
  const fence = content.match(/```(?:sql|postgresql|postgres)?\s*\n?([\s\S]*?)```/i);
  return (fence ? fence[1]! : content).trim().replace(/;\s*$/, "");
}

function planCost(row: Record<string, unknown> | undefined): number {
  let value = row?.["QUERY PLAN"];
  if (typeof value === "string") value = JSON.parse(value);
  const cost = (value as { Plan?: { "Total Cost"?: unknown } }[] | undefined)?.[0]?.Plan?.["Total Cost"];
  return typeof cost === "number" ? cost : Infinity;
}

function sqlFailure(err: unknown, timeoutMs: number): AppError {
  if (err instanceof AppError) return err;
  const state = sqlState(err);
  if (state === "57014") return errors.timeout(`Generated SQL ran longer than ${timeoutMs} ms`);
  if (state === "42501") return errors.forbidden("Generated SQL reads data the caller may not read");
  if (state === "25006") return errors.validation("Generated SQL refused: it tries to write");
  if (state && /^[0-9A-Z]{5}$/.test(state)) {
    return errors.validation(`Generated SQL failed (${state}): ${(err as Error).message}`.slice(0, 400));
  }
  return errors.internal(err);
}
