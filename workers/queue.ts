import { describeError, log } from "../lib/log.ts";

/**
 * The messages of the platform's one Deno KV queue, discriminated by `kind`. Each area adds its own kinds here
 * (jobs will add `job.run`, cron `cron.tick`…) and registers one handler per kind with
 * {@linkcode QueueDispatcher.on}. Messages carry ids, never state: handlers read the state of record and act
 * only when it still calls for it, so a duplicate delivery does nothing.
 */
export type QueueMessage =
  /** Deliver notifications of a project; each `dispatch` token must still be current on its row. */
  | {
    kind: "notification.send";
    project: string;
    items: { id: string; channel: string; dispatch: string }[];
  }
  /** Run these jobs of a project if they are still due (services/jobs: the claim makes duplicates harmless). */
  | { kind: "job.run"; project: string; ids: string[] };

/** The kinds of {@linkcode QueueMessage}. */
export type QueueKind = QueueMessage["kind"];

/** The message of one kind. */
export type QueueMessageOf<K extends QueueKind> = Extract<QueueMessage, { kind: K }>;

/** A handler of one kind of message. Throwing makes KV deliver the message again later. */
export type QueueHandler<K extends QueueKind> = (message: QueueMessageOf<K>) => Promise<void>;

/** Options of {@linkcode enqueue}. */
export interface EnqueueOptions {
  /** Milliseconds before delivery. */
  delayMs?: number;
  /** Keys where KV writes the message if it could not be delivered after its retries. */
  keysIfUndelivered?: Deno.KvKey[];
}

/** The KV prefix where undelivered messages land (`keysIfUndelivered`). */
export const UNDELIVERED_PREFIX: Deno.KvKey = ["queue", "undelivered"];

/** Puts one message on the queue, with its undelivered key under {@linkcode UNDELIVERED_PREFIX}. */
export async function enqueue(
  kv: Deno.Kv,
  message: QueueMessage,
  options: EnqueueOptions = {},
): Promise<void> {
  const keys = options.keysIfUndelivered ?? [[...UNDELIVERED_PREFIX, message.kind, crypto.randomUUID()]];
  const delay = Math.max(0, Math.round(options.delayMs ?? 0));
  const result = await kv.enqueue(message, {
    delay: delay > 0 ? delay : undefined,
    keysIfUndelivered: keys,
    backoffSchedule: [1000, 5000, 10000, 30000, 60000],
  });
  if (!result.ok) throw new Error("KV refused the enqueue");
}

function isMessage(value: unknown): value is { kind: string } {
  return typeof value === "object" && value !== null &&
    typeof (value as { kind?: unknown }).kind === "string";
}

/**
 * QueueDispatcher is the single `kv.listenQueue` of the platform: it routes each message to the handler of its
 * kind, counts handlers in flight and stops cleanly (no new work, in-flight work finished). Messages that
 * arrive while stopping are put back on the queue for the next process.
 */
export class QueueDispatcher {
  private readonly handlers = new Map<string, (message: never) => Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();
  private listening: Promise<void> | null = null;
  private stopping = false;

  constructor(private readonly kv: Deno.Kv) {}

  /** Registers the handler of `kind` (one per kind). */
  on<K extends QueueKind>(kind: K, handler: QueueHandler<K>): this {
    if (this.handlers.has(kind)) throw new Error(`A handler of "${kind}" is already registered`);
    this.handlers.set(kind, handler as (message: never) => Promise<void>);
    return this;
  }

  /** Starts listening. KV allows one listener per connection: start once. */
  start(): void {
    if (this.listening) return;
    this.listening = this.kv.listenQueue((raw: unknown) => this.dispatch(raw)).catch((err) => {
      if (!this.stopping) log.error("queue listener ended", { cause: describeError(err) });
    });
  }

  private dispatch(raw: unknown): Promise<void> {
    if (this.stopping) {
      // Put a copy back (delayed) before acknowledging this one: the copy is on disk before the ack, so the
      // message survives however soon KV closes. A duplicate is harmless: handlers check state first.
      // If KV is closing under us, the copy fails: leave this one unacknowledged (never settled, nothing thrown
      // into KV's log) and KV delivers it again after the restart.
      return isMessage(raw)
        ? enqueue(this.kv, raw as QueueMessage, { delayMs: 1000 }).catch(() => new Promise<void>(() => {}))
        : Promise.resolve();
    }
    if (!isMessage(raw)) {
      log.warn("queue message dropped: not a message");
      return Promise.resolve();
    }
    const handler = this.handlers.get(raw.kind);
    if (!handler) {
      log.warn("queue message dropped: no handler", { kind: raw.kind });
      return Promise.resolve();
    }
    const run = handler(raw as never).catch((err) => {
      log.warn("queue handler failed", { kind: raw.kind, cause: describeError(err) });
      throw err;
    });
    const tracked = run.catch(() => {}).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    return run;
  }

  /** Messages being handled now. */
  get busy(): number {
    return this.inFlight.size;
  }

  /** Stops taking messages and waits for the handlers in flight. KV closing ends the listener itself. */
  async stop(): Promise<void> {
    this.stopping = true;
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }
}
