import { type PGlite, types } from "@electric-sql/pglite";
import { beginSql, type IsolationLevel, type PipelineStatement } from "./driver.ts";
import { type BackendMessage, type DatabaseError, readBackend } from "./pg_backend.ts";
import { WireWriter } from "./pg_wire.ts";
import { concatBytes } from "../lib/encoding.ts";

/**
 * The most statement texts one PGlite instance keeps prepared for pipelines: the bound caps the memory that many
 * query shapes could take. Past it, the least recently used one is closed to make room.
 */
export const MAX_PREPARED_TEXTS = 256;

/** The prefix of our statement names: one of our own, so that a user's PREPARE rarely meets one. */
export const NAME_PREFIX = "platform_pipeline_";

/** How a pipeline ends: PipelineEnd, whose decision may also come later (from the caller's thread). */
export interface PglitePipelineOptions {
  end:
    | "commit"
    | "rollback"
    | ((rows: Record<string, unknown>[][]) => "commit" | "rollback" | Promise<"commit" | "rollback">);
  readOnly?: boolean;
  isolation?: IsolationLevel;
  /** Called when the pipeline gets the engine (it may wait for other calls first). */
  onStart?: () => void;
}

/**
 * True when `error` says our prepared statements no longer hold: a name of ours is gone (26000: DEALLOCATE or
 * DISCARD ALL in this one session) or taken (42P05: a user's PREPARE), or DDL changed the columns a statement
 * returns (0A000, which PostgreSQL raises instead of answering with other columns). Each is raised before the
 * statement runs, and fails the whole transaction.
 */
function lostStatements(error: DatabaseError): boolean {
  const code = error.code;
  if (code === "26000" || code === "42P05") return error.message.includes(NAME_PREFIX);
  return code === "0A000" && error.routine === "RevalidateCachedQuery";
}

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
  private readonly stale: string[] = [];
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
  confirm(parsed: [string, string][], messages: BackendMessage[]): void {
    let n = messages.reduce((k, m) => m.type === "parseComplete" ? k + 1 : k, 0);
    for (const [text, name] of parsed) {
      if (n-- <= 0) break;
      if (name) this.names.set(text, name);
    }
  }

  /** Forgets every name: the next batch closes them and parses again, under new names. */
  clear(): void {
    this.stale.push(...this.names.values());
    this.names.clear();
  }

  /** The names forgotten by clear() and not closed yet; taking them marks them closed. */
  takeStale(): string[] {
    return this.stale.splice(0);
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

  constructor(private readonly cache: PreparedStatements) {
    // Close statements forgotten after a failure (Close of a name that is gone is no error).
    for (const name of cache.takeStale()) this.wire.closeStatement(name);
  }

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

/** Options of {@linkcode pglitePipeline}. */
export interface PipelineEngineOptions {
  /** Statement texts kept prepared (default MAX_PREPARED_TEXTS). */
  maxPrepared?: number;
  /** Receives the notifications (NOTIFY) that arrive with a batch's answer, which PGlite does not see. */
  onNotification?: (channel: string, payload: string) => void;
}

/**
 * Db.pipeline on PGlite: runs a whole transaction in one call into the engine. BEGIN, the statements and a fixed
 * end travel as one extended-protocol batch closed by Sync (PGlite's `transaction()` makes six calls per
 * statement), each statement prepared once per text; the answer is read by readBackend. Holds both of PGlite's
 * locks, as its own `transaction()` does, so nothing interleaves.
 */
export function pglitePipeline(pg: PGlite, options: PipelineEngineOptions = {}) {
  const cache = new PreparedStatements(options.maxPrepared ?? MAX_PREPARED_TEXTS);
  const notify = options.onNotification ?? (() => {});
  // syncToFs: false, as the data directory is PGlite's NodeFS, whose sync is a no-op (writes go to the files);
  // asking for it only queues the call behind one more lock.
  const send = async (message: Uint8Array): Promise<BackendMessage[]> => {
    const chunks: Uint8Array[] = [];
    // The engine hands out views of its own memory: copy each chunk before the next call overwrites it.
    await pg.execProtocolRawStream(message, {
      syncToFs: false,
      onRawData: (bytes) => chunks.push(bytes.slice()),
    });
    const messages = readBackend(chunks.length === 1 ? chunks[0]! : concatBytes(chunks));
    for (const m of messages) {
      if (m.type === "notification") queueMicrotask(() => notify(m.channel, m.payload));
    }
    return messages;
  };
  const rollbackIfOpen = async (messages: BackendMessage[]) => {
    const ready = messages.findLast((m) => m.type === "readyForQuery");
    if (ready?.status !== "I") await send(new WireWriter(16).query("rollback").bytes());
  };
  const failure = (messages: BackendMessage[]) =>
    (messages.find((m) => m.type === "error") as { error: DatabaseError } | undefined)?.error;
  const run = async (
    statements: PipelineStatement[],
    { end, readOnly, isolation }: PglitePipelineOptions,
    retried: boolean,
  ) => {
    const batch = new Batch(cache);
    batch.add(beginSql({ readOnly, isolation }), [], false);
    for (const s of statements) batch.add(s.sql, s.params.map(asText), true);
    if (typeof end === "string") batch.add(end, [], false);
    const messages = await send(batch.message());
    cache.confirm(batch.parsed, messages);
    const error = failure(messages);
    if (error) {
      await rollbackIfOpen(messages);
      // The transaction failed before anything was kept: run it again, parsed afresh.
      if (!retried && lostStatements(error)) {
        cache.clear();
        return undefined;
      }
      throw error;
    }
    const rows = resultRows(messages, pg.parsers).slice(1, 1 + statements.length);
    if (typeof end === "string") return rows;
    let decision: "commit" | "rollback";
    try {
      decision = await end(rows);
    } catch (err) {
      await send(new WireWriter(16).query("rollback").bytes());
      throw err;
    }
    const closing = await send(
      new WireWriter(16).query(decision === "commit" ? "commit" : "rollback").bytes(),
    );
    const failed = failure(closing);
    if (failed) {
      await rollbackIfOpen(closing);
      throw failed;
    }
    return rows;
  };
  return (statements: PipelineStatement[], options: PglitePipelineOptions) =>
    pg._runExclusiveTransaction(() =>
      pg._runExclusiveQuery(async () => {
        options.onStart?.();
        return await run(statements, options, false) ?? (await run(statements, options, true))!;
      })
    );
}

/** The rows of each executed statement of a batch, values parsed as PGlite's `query()` parses them. */
function resultRows(messages: BackendMessage[], parsers: PGlite["parsers"]): Record<string, unknown>[][] {
  const results: Record<string, unknown>[][] = [];
  let fields: { name: string; typeOid: number }[] = [];
  let rows: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.type === "rowDescription") fields = m.fields;
    else if (m.type === "dataRow") {
      const row: Record<string, unknown> = {};
      m.values.forEach((v, i) => row[fields[i]!.name] = types.parseType(v, fields[i]!.typeOid, parsers));
      rows.push(row);
    } else if (m.type === "commandComplete") {
      results.push(rows);
      rows = [];
      fields = [];
    }
  }
  return results;
}
