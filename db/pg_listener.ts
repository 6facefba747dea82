import type postgres from "postgres";
import { log } from "../lib/log.ts";

/** The longest wait between two attempts to listen again after the connection was lost. */
const MAX_RETRY_MS = 2_000;

/**
 * LISTEN on a connection of its own that listens again whenever it is lost. postgres.js's own `listen` tries
 * once after a close and drops the channel for good when that try fails (a server still restarting, or the
 * closed connection's last state handed to the new try): realtime and work announcements would then go quiet
 * without a word. Here every loss opens a fresh connection and subscribes every channel again, retrying with
 * backoff until it succeeds.
 */
export class PgListener {
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private sql: postgres.Sql | null = null;
  /** Subscriptions and recoveries, one at a time: a recovery never races a new channel. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;

  /** `connect` opens one connection that hands notifications to `onnotify` and reports its close. */
  constructor(
    private readonly connect: (hooks: {
      onnotify: (channel: string, payload: string) => void;
      onclose: () => void;
    }) => postgres.Sql,
  ) {}

  /** Subscribes `onPayload` to `channel`; the returned function unsubscribes it. */
  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    if (!set) {
      this.handlers.set(channel, set = new Set([onPayload]));
      try {
        await this.serially(async () => {
          await (this.sql ?? this.open()).unsafe(`listen ${quote(channel)}`);
        });
      } catch (err) {
        this.handlers.delete(channel);
        throw err;
      }
    } else set.add(onPayload);
    return async () => {
      const now = this.handlers.get(channel);
      if (!now?.delete(onPayload) || now.size > 0) return;
      this.handlers.delete(channel);
      await this.serially(async () => {
        await this.sql?.unsafe(`unlisten ${quote(channel)}`).catch(() => {});
      });
    };
  }

  /** Ends the connection; nothing listens again. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const sql = this.sql;
    this.sql = null;
    await sql?.end({ timeout: 5 });
  }

  private serially(fn: () => Promise<void>): Promise<void> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => {});
    return run;
  }

  private open(): postgres.Sql {
    const sql = this.connect({
      onnotify: (channel, payload) => {
        for (const fn of this.handlers.get(channel) ?? []) fn(payload);
      },
      onclose: () => this.lost(sql),
    });
    this.sql = sql;
    return sql;
  }

  /** The connection now (a close may have replaced it while a statement was awaited). */
  private current(): postgres.Sql | null {
    return this.sql;
  }

  /** The connection `sql` closed: a fresh one subscribes every channel again (see recover). */
  private lost(sql: postgres.Sql): void {
    if (this.closed || this.sql !== sql) return;
    this.sql = null;
    sql.end({ timeout: 0 }).catch(() => {});
    void this.serially(() => this.recover());
  }

  /** Opens a fresh connection and subscribes every channel on it, with backoff until that succeeds. */
  private async recover(): Promise<void> {
    for (let waitMs = 50; !this.closed && !this.sql && this.handlers.size > 0;) {
      const sql = this.open();
      try {
        for (const channel of this.handlers.keys()) await sql.unsafe(`listen ${quote(channel)}`);
        log.info("listening again after the database connection was lost", { channels: this.handlers.size });
        return;
      } catch {
        if (this.current() === sql) {
          this.sql = null;
          sql.end({ timeout: 0 }).catch(() => {});
        }
        await new Promise<void>((resolve) => this.retryTimer = setTimeout(resolve, waitMs));
        waitMs = Math.min(waitMs * 2, MAX_RETRY_MS);
      }
    }
  }
}

function quote(channel: string): string {
  return `"${channel.replaceAll('"', '""')}"`;
}
