import { PGlite, protocol, type Transaction, types } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import type { Db, PipelineOptions, PipelineStatement, Queryable } from "./driver.ts";

function wrap(db: PGlite | Transaction): Queryable {
  return {
    async query<T>(text: string, params: unknown[] = []) {
      const result = await db.query<T>(text, params);
      return result.rows;
    },
    async exec(text: string) {
      await db.exec(text);
    },
    async execRows(text: string) {
      const results = await db.exec(text);
      return (results.findLast((r) => r.fields.length > 0)?.rows ?? []) as Record<string, unknown>[];
    },
  };
}

const wire = protocol.serialize;

/** A pipeline parameter in the text format (its type is the one PostgreSQL infers for `$n`). */
function asText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") {
    return String(value);
  }
  throw new TypeError("a pipeline parameter is a string, a number, a bigint, a boolean or null");
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Parse, bind (and describe) and execute `text`: one statement of an extended-protocol batch. */
function statement(text: string, values: (string | null)[] = [], describe = false): Uint8Array[] {
  const parts = [wire.parse({ text }), wire.bind({ values })];
  if (describe) parts.push(wire.describe({ type: "P" }));
  parts.push(wire.execute({}));
  return parts;
}

type Message = { name: string; [key: string]: unknown };

/**
 * Runs a whole transaction in one call into the engine: BEGIN, the statements and a fixed end travel as one
 * extended-protocol batch closed by Sync (PGlite's `transaction()` makes six calls per statement). Holds both of
 * PGlite's locks, as its own `transaction()` does, so nothing interleaves.
 */
function pipelineOf(pg: PGlite) {
  const send = async (parts: Uint8Array[]): Promise<Message[]> =>
    (await pg.execProtocol(concat(parts), { throwOnError: false })).messages as unknown as Message[];
  const rollbackIfOpen = async (messages: Message[]) => {
    const ready = messages.findLast((m) => m.name === "readyForQuery");
    if (ready?.status !== "I") await send([wire.query("rollback")]);
  };
  return (statements: PipelineStatement[], { end, readOnly }: PipelineOptions) =>
    pg._runExclusiveTransaction(() =>
      pg._runExclusiveQuery(async () => {
        const parts = statement(readOnly ? "begin read only" : "begin");
        for (const s of statements) parts.push(...statement(s.sql, s.params.map(asText), true));
        if (typeof end === "string") parts.push(...statement(end));
        parts.push(wire.sync());
        const messages = await send(parts);
        const error = messages.find((m) => m.name === "error");
        if (error) {
          await rollbackIfOpen(messages);
          throw error;
        }
        const rows = resultRows(messages, pg.parsers).slice(1, 1 + statements.length);
        if (typeof end === "string") return rows;
        let decision: "commit" | "rollback";
        try {
          decision = end(rows);
        } catch (err) {
          await send([wire.query("rollback")]);
          throw err;
        }
        const closing = await send([wire.query(decision === "commit" ? "commit" : "rollback")]);
        const failed = closing.find((m) => m.name === "error");
        if (failed) {
          await rollbackIfOpen(closing);
          throw failed;
        }
        return rows;
      })
    );
}

/** The rows of each executed statement of a batch, values parsed as PGlite's `query()` parses them. */
function resultRows(messages: Message[], parsers: PGlite["parsers"]): Record<string, unknown>[][] {
  const results: Record<string, unknown>[][] = [];
  let fields: { name: string; dataTypeID: number }[] = [];
  let rows: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.name === "rowDescription") fields = m.fields as typeof fields;
    else if (m.name === "dataRow") {
      const values = m.fields as (string | null)[];
      const row: Record<string, unknown> = {};
      values.forEach((v, i) => row[fields[i]!.name] = types.parseType(v, fields[i]!.dataTypeID, parsers));
      rows.push(row);
    } else if (m.name === "commandComplete" || m.name === "emptyQuery") {
      results.push(rows);
      rows = [];
      fields = [];
    }
  }
  return results;
}

/** Opens (creating when new) an embedded PGlite database in `dir`. One process may hold a directory. */
export async function openPglite(dir: string): Promise<Db> {
  await Deno.mkdir(dir, { recursive: true });
  // int8 as a string, as postgres.js returns it: the same SQL gives the same JSON on both drivers.
  // pgvector is loaded so that `create extension vector` works, as on a server that has it (AI gateway).
  const pg = await PGlite.create(dir, {
    parsers: { [types.INT8]: (value: string) => value },
    extensions: { vector },
  });
  const base = wrap(pg);
  return {
    kind: "pglite",
    query: base.query,
    exec: base.exec,
    execRows: base.execRows,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    pipeline: pipelineOf(pg),
    listen: (channel, onPayload) => pg.listen(channel, onPayload),
    close: () => pg.close(),
  };
}
