import type { Databases } from "../../db/databases.ts";
import { logStore } from "./store.ts";
import { describeError, log } from "../../lib/log.ts";

/** One line of a function's log. */
export interface LogEntry {
  timestamp: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
}

const FLUSH_MS = 1_000;
// Lines waiting to be written, across projects, while a database cannot be reached: the oldest go first.
const MAX_PENDING = 100_000;

interface PendingLine extends LogEntry {
  functionId: string;
}

/**
 * FunctionLogs keeps the recent console output of each function in its project database, so that every
 * instance reads the same log: lines are written in batches once a second (one statement per project), and
 * the newest `capacity` lines of each function are kept. A read writes this instance's pending lines first.
 */
export class FunctionLogs {
  private readonly owners = new Map<string, string>(); // function id → project ref
  private readonly pending = new Map<string, PendingLine[]>(); // by project ref
  private readonly writing = new Map<string, Promise<void>>();
  private held = 0;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly dbs: Pick<Databases, "project">,
    private readonly capacity: number,
    private readonly maxFunctions = 10_000,
  ) {
    this.timer = setInterval(() => this.flushAll(), FLUSH_MS);
  }

  /** Records that `functionId` belongs to project `ref`: the runtime names a line's function only. */
  own(functionId: string, ref: string): void {
    if (this.owners.get(functionId) === ref) return;
    if (this.owners.size >= this.maxFunctions) this.owners.delete(this.owners.keys().next().value!);
    this.owners.set(functionId, ref);
  }

  /** Appends a line to the log of `functionId` (dropped when its project is not known). */
  add(functionId: string, level: LogEntry["level"], message: string): void {
    const ref = this.owners.get(functionId);
    if (ref === undefined) return;
    if (this.held >= MAX_PENDING) this.dropOldest();
    let lines = this.pending.get(ref);
    if (!lines) this.pending.set(ref, lines = []);
    // PostgreSQL text holds no NUL.
    lines.push({
      functionId,
      timestamp: new Date().toISOString(),
      level,
      message: message.replaceAll("\0", ""),
    });
    this.held++;
  }

  private dropOldest(): void {
    for (const lines of this.pending.values()) {
      if (lines.length > 0) {
        lines.shift();
        this.held--;
        return;
      }
    }
  }

  /** The last `limit` lines of a function, newest first, optionally of one level. */
  async read(ref: string, functionId: string, limit: number, level?: LogEntry["level"]): Promise<LogEntry[]> {
    await this.flush(ref);
    const db = await this.dbs.project(ref);
    const rows = await logStore.read(db, functionId, Math.min(limit, this.capacity), level ?? null);
    return rows.map((r) => ({ timestamp: new Date(r.at).toISOString(), level: r.level, message: r.message }));
  }

  /** Forgets a deleted function (its stored lines go with it). */
  drop(functionId: string): void {
    this.owners.delete(functionId);
  }

  /** Writes the pending lines of one project; after a failure they wait for the next flush. */
  flush(ref: string): Promise<void> {
    const previous = this.writing.get(ref) ?? Promise.resolve();
    const next = previous.then(() => this.write(ref));
    this.writing.set(ref, next);
    next.finally(() => {
      if (this.writing.get(ref) === next) this.writing.delete(ref);
    });
    return next;
  }

  private async write(ref: string): Promise<void> {
    const lines = this.pending.get(ref);
    if (!lines || lines.length === 0) return;
    this.pending.delete(ref);
    let db;
    try {
      db = await this.dbs.project(ref);
      await logStore.insert(db, lines);
    } catch (err) {
      this.pending.set(ref, [...lines, ...(this.pending.get(ref) ?? [])]);
      log.warn("cannot write function logs; kept for the next flush", {
        project: ref,
        lines: lines.length,
        cause: describeError(err),
      });
      return;
    }
    this.held -= lines.length;
    try {
      await logStore.keepNewest(db, [...new Set(lines.map((l) => l.functionId))], this.capacity);
    } catch (err) {
      log.warn("cannot delete old function logs", { project: ref, cause: describeError(err) });
    }
  }

  /** Writes every project's pending lines, and waits for the writes under way. */
  async flushAll(): Promise<void> {
    const refs = new Set([...this.pending.keys(), ...this.writing.keys()]);
    await Promise.all([...refs].map((ref) => this.flush(ref)));
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushAll();
  }
}
