import { type PGlite, types } from "@electric-sql/pglite";
import type { PipelineOptions, PipelineStatement } from "./driver.ts";
import { WireWriter } from "./pg_wire.ts";

/**
 * The most statement texts one PGlite instance keeps prepared for pipelines: the bound caps the memory that many
 * query shapes could take. Past it, the least recently used one is closed to make room.
 */
export const MAX_PREPARED_TEXTS = 256;

/** The prefix of our statement names: one of our own, so that a user's PREPARE rarely meets one. */
export const NAME_PREFIX = "platform_pipeline_";

/** SQLSTATEs that say a statement name of ours is gone (DEALLOCATE, DISCARD ALL) or taken (a user's PREPARE). */
const LOST_NAME = new Set(["26000", "42P05"]);

type Message = { name: string; [key: string]: unknown };

/** A pipeline parameter in the text format (its type is the one PostgreSQL infers for `$n`). */
function asText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") {
    return String(value);
  }
  throw new TypeError("a pipeline parameter is a string, a number, a bigint, a boolean or null");
}

/**
 * The statements one PGlite instance (one session) has prepared for pipelines: SQL text → name, least recently
 * used first.
 */
class PreparedStatements {
  private readonly names = new Map<string, string>();
  private counter = 0;

  constructor(private readonly max: number) {}

  /** The name `text` is prepared under, now the most recently used; undefined when it is not prepared. */
  use(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined) {
      this.names.delete(text);
      this.names.set(text, name);
    }
    return name;
  }

  /**
   * A new name for a text about to be parsed, with the name to close first when the cache is full (the least
   * recently used not in `keep`); "" (unnamed) when no room can be made.
   */
  reserve(pending: number, keep: Set<string>): { name: string; evicted?: string } {
    let evicted: string | undefined;
    if (this.names.size + pending >= this.max) {
      for (const [text, name] of this.names) {
        if (keep.has(name)) continue;
        this.names.delete(text);
        evicted = name;
        break;
      }
      if (evicted === undefined) return { name: "" };
    }
    return { name: `${NAME_PREFIX}${++this.counter}`, evicted };
  }

  /** Keeps the names the engine prepared: each ParseComplete answers the next Parse of the batch, in order. */
  confirm(parsed: [string, string][], messages: Message[]): void {
    let n = messages.reduce((k, m) => m.name === "parseComplete" ? k + 1 : k, 0);
    for (const [text, name] of parsed) {
      if (n-- <= 0) break;
      if (name) this.names.set(text, name);
    }
  }

  /** Forgets every name: the next batch parses again, under new names. */
  clear(): void {
    this.names.clear();
  }
}

/**
 * The messages of one pipeline. A text seen before binds its prepared statement: PostgreSQL then skips parsing,
 * analysis and rewriting, and reuses a generic plan when its own rule finds one as good. The engine runs on this
 * thread, so every step skipped is time given back to requests. A new text is parsed under a new name, kept
 * once the engine confirms it.
 */
class Batch {
  private readonly wire = new WireWriter();
  /** [text, name] of each Parse sent, in order; name "" for an unnamed one. */
  readonly parsed: [string, string][] = [];
  /** Names this batch binds: never evicted by it. */
  private readonly used = new Set<string>();
  private readonly fresh = new Map<string, string>();

  constructor(private readonly cache: PreparedStatements) {}

  /** Adds Parse (when new), Bind, Describe (when `describe`) and Execute of `text`. */
  add(text: string, values: (string | null)[], describe: boolean): void {
    let name = this.fresh.get(text) ?? this.cache.use(text);
    if (name === undefined) {
      const reserved = this.cache.reserve(this.fresh.size, this.used);
      name = reserved.name;
      if (reserved.evicted) this.wire.closeStatement(reserved.evicted);
      if (name) this.fresh.set(text, name);
      this.wire.parse(name, text);
      this.parsed.push([text, name]);
    }
    if (name) this.used.add(name);
    this.wire.bind(name, values);
    if (describe) this.wire.describePortal();
    this.wire.execute();
  }

  /** The whole batch, closed by Sync. */
  message(): Uint8Array {
    return this.wire.sync().bytes();
  }
}

/**
 * Db.pipeline on PGlite: runs a whole transaction in one call into the engine. BEGIN, the statements and a fixed
 * end travel as one extended-protocol batch closed by Sync (PGlite's `transaction()` makes six calls per
 * statement), each statement prepared once per text. Holds both of PGlite's locks, as its own `transaction()`
 * does, so nothing interleaves.
 */
export function pglitePipeline(pg: PGlite, maxPrepared = MAX_PREPARED_TEXTS) {
  const cache = new PreparedStatements(maxPrepared);
  const send = async (message: Uint8Array): Promise<Message[]> =>
    (await pg.execProtocol(message, { throwOnError: false })).messages as unknown as Message[];
  const rollbackIfOpen = async (messages: Message[]) => {
    const ready = messages.findLast((m) => m.name === "readyForQuery");
    if (ready?.status !== "I") await send(new WireWriter(16).query("rollback").bytes());
  };
  const run = async (
    statements: PipelineStatement[],
    { end, readOnly }: PipelineOptions,
    retried: boolean,
  ) => {
    const batch = new Batch(cache);
    batch.add(readOnly ? "begin read only" : "begin", [], false);
    for (const s of statements) batch.add(s.sql, s.params.map(asText), true);
    if (typeof end === "string") batch.add(end, [], false);
    const messages = await send(batch.message());
    cache.confirm(batch.parsed, messages);
    const error = messages.find((m) => m.name === "error");
    if (error) {
      await rollbackIfOpen(messages);
      // Our names are gone or taken (user SQL in this one session ran DEALLOCATE, DISCARD or PREPARE): the
      // transaction failed before anything was kept, so run it again, parsed afresh.
      if (!retried && LOST_NAME.has(error.code as string) && String(error.message).includes(NAME_PREFIX)) {
        cache.clear();
        return undefined;
      }
      throw error;
    }
    const rows = resultRows(messages, pg.parsers).slice(1, 1 + statements.length);
    if (typeof end === "string") return rows;
    let decision: "commit" | "rollback";
    try {
      decision = end(rows);
    } catch (err) {
      await send(new WireWriter(16).query("rollback").bytes());
      throw err;
    }
    const closing = await send(
      new WireWriter(16).query(decision === "commit" ? "commit" : "rollback").bytes(),
    );
    const failed = closing.find((m) => m.name === "error");
    if (failed) {
      await rollbackIfOpen(closing);
      throw failed;
    }
    return rows;
  };
  return (statements: PipelineStatement[], options: PipelineOptions) =>
    pg._runExclusiveTransaction(() =>
      pg._runExclusiveQuery(async () =>
        await run(statements, options, false) ?? (await run(statements, options, true))!
      )
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
