/**
 * The producer side of the platform's durable work queue (one Deno KV queue): the message format and the
 * enqueue that services call. It lives in the kernel so that services can enqueue without importing the
 * workers that consume (workers/work_queue.ts).
 *
 * Messages carry ids and tokens, never state: the area's table is the state of record, and a delivery acts only
 * when its row still calls for it, so duplicates and stale deliveries do nothing.
 */

/** The kinds of work, one per area that uses the queue. */
export type WorkKind = "job.run" | "notification.send";

/** One unit of work: a row id, the token of this dispatch, and the concurrency lane it runs in. */
export interface WorkItem {
  id: string;
  /** Unique per dispatch: the local fast path's de-duplication key, and a notification's `dispatch_id`. */
  token: string;
  /** Work of one lane shares a concurrency limit (a notification's channel); one lane when absent. */
  lane?: string;
}

/** A KV queue message: items of one kind and one project. */
export interface WorkMessage {
  kind: WorkKind;
  project: string;
  items: WorkItem[];
}

/**
 * Items per message at most. Deno KV delivers about as many messages a second as it writes, so one message per
 * item made the queue the bottleneck under load; grouped, a message's cost is shared (notification items are
 * heavier to run, so fewer per message keep a redelivery small).
 */
const BATCH_MAX: Record<WorkKind, number> = { "job.run": 100, "notification.send": 50 };

/** KV's redelivery schedule of a message whose handler threw (then it is dropped: the sweep finds the row). */
const KV_BACKOFF = [1000, 5000, 10000, 30000, 60000];

/** Runs an immediate item at once in this process (the workers' fast path). */
export type LocalRunner = (project: string, item: WorkItem) => void;

interface Batch {
  items: WorkItem[];
  waiters: PromiseWithResolvers<void>[];
  timer: ReturnType<typeof setTimeout>;
}

/**
 * WorkQueue enqueues work. Immediate items of one kind and project made in the same turn of the event loop
 * share one message; delayed items go alone. When this process runs the workers, they attach a local runner
 * and immediate items also start at once: KV takes tens of milliseconds to hand a message back, and the row
 * being the record, the KV copy is the backstop (it then finds the work done).
 */
export class WorkQueue {
  private readonly pending = new Map<string, Batch>();
  private readonly runners = new Map<WorkKind, LocalRunner>();

  /** `retryScheduleMs`: KV's redeliveries of a message whose handler threw (shorter in tests). */
  constructor(readonly kv: Deno.Kv, private readonly retryScheduleMs = KV_BACKOFF) {}

  /**
   * Writes one message. Without `keysIfUndelivered`: a message KV gives up on is dropped, not parked where
   * nothing reads it; the rows are the record, and the sweep re-enqueues work that is due.
   */
  async put(message: WorkMessage, delayMs = 0): Promise<void> {
    const delay = Math.max(0, Math.round(delayMs));
    const result = await this.kv.enqueue(message, {
      delay: delay > 0 ? delay : undefined,
      backoffSchedule: this.retryScheduleMs,
    });
    if (!result.ok) throw new Error("KV refused the enqueue");
  }

  /** Attaches (or with null, detaches) the local runner of a kind. */
  attach(kind: WorkKind, runner: LocalRunner | null): void {
    if (runner) this.runners.set(kind, runner);
    else this.runners.delete(kind);
  }

  /** Puts an item on the queue; resolves once the message holding it is written. */
  enqueue(kind: WorkKind, project: string, item: WorkItem, delayMs = 0): Promise<void> {
    if (delayMs > 0) return this.put({ kind, project, items: [item] }, delayMs);
    const key = `${kind}\n${project}`;
    let batch = this.pending.get(key);
    if (!batch) {
      batch = { items: [], waiters: [], timer: setTimeout(() => this.flush(key), 0) };
      this.pending.set(key, batch);
    }
    const waiter = Promise.withResolvers<void>();
    batch.items.push(item);
    batch.waiters.push(waiter);
    if (batch.items.length >= BATCH_MAX[kind]) {
      clearTimeout(batch.timer);
      this.flush(key);
    }
    this.runners.get(kind)?.(project, item);
    return waiter.promise;
  }

  private flush(key: string): void {
    const batch = this.pending.get(key);
    if (!batch) return;
    this.pending.delete(key);
    const [kind, project] = key.split("\n") as [WorkKind, string];
    this.put({ kind, project, items: batch.items }).then(
      () => batch.waiters.forEach((w) => w.resolve()),
      (err) => batch.waiters.forEach((w) => w.reject(err)),
    );
  }

  /** Writes whatever is pending now (before KV closes). */
  async drain(): Promise<void> {
    const waits = [...this.pending.values()].flatMap((b) => b.waiters.map((w) => w.promise.catch(() => {})));
    for (const [key, batch] of this.pending) {
      clearTimeout(batch.timer);
      this.flush(key);
    }
    await Promise.all(waits);
  }
}

/**
 * The channel that tells the other instances where work waits: on PostgreSQL, `NOTIFY` on the control database,
 * which every instance shares.
 */
export interface WorkBus {
  /** Sends each payload to every listener (this process's own included). */
  announce(payloads: string[]): Promise<void>;
  /** Listens; returns the function that stops listening. */
  listen(onPayload: (payload: string) => void): Promise<() => Promise<void>>;
}

/** A fresh dispatch token. */
export const newToken = (): string => crypto.randomUUID();

/** What an area's claim returns: its row as claimed, with the attempt it starts (1 = first). */
export interface Claimed {
  attempt: number;
  maxAttempts: number;
}

/** How one attempt went, as the area's `run` reports it. */
export type Outcome =
  | { ok: true }
  | {
    ok: false;
    /** No retry can help (a permanent error): dead at once. */
    permanent?: boolean;
    /** The least wait before the retry (a provider's Retry-After). */
    retryAfterMs?: number;
  };

/** What follows an attempt, decided by the engine from the outcome and the attempts left. */
export type Next =
  | { status: "done" }
  /** Retried after `retryInMs` by the item `retry` (a fresh token). */
  | { status: "failed"; retryInMs: number; retry: WorkItem }
  | { status: "dead" };

/**
 * An area's part of the work queue (jobs, notifications): its table operations and how to run one attempt.
 * The workers' engine does the rest: batching, the local fast path, leases, attempts, backoff and the sweep.
 */
export interface WorkArea<C extends Claimed = Claimed, O extends Outcome = Outcome> {
  kind: WorkKind;
  /** Attempts in flight at most per lane, in one process. */
  concurrency: number;
  /** Lease of an attempt in flight, renewed every third of it while it runs. */
  leaseSecs: number;
  /** Backoff of retries (exponential from `baseMs`, capped, jittered); `baseMs` may depend on the claim. */
  backoff(claimed: C): { baseMs: number; capMs: number };
  /**
   * Claims the item's row for one attempt (attempts + 1) with a lease named `lease.token`; null when the
   * row no longer calls for it (done, running elsewhere, not due, superseded): duplicates then do nothing.
   */
  claim(project: string, item: WorkItem, lease: { token: string; secs: number }): Promise<C | null>;
  /**
   * Optional: claims several items of a project in one statement, as `claim` does each (results in order).
   * The engine then groups the claims made together; an item twice in one batch is claimed at most once.
   */
  claimMany?(
    project: string,
    claims: { item: WorkItem; token: string }[],
    secs: number,
  ): Promise<(C | null)[]>;
  /**
   * Optional: claims up to `limit` of the project's due items straight from the table, oldest due first,
   * skipping rows other sessions hold locked (`FOR UPDATE SKIP LOCKED`), each with a fresh lease whose token it
   * returns. Instances sharing one PostgreSQL pull work this way that no queue message of theirs announced.
   */
  claimDue?(
    project: string,
    limit: number,
    secs: number,
  ): Promise<{ item: WorkItem; token: string; claimed: C }[]>;
  /** Runs one attempt; throwing means the attempt could not even be tried (the queue retries the delivery). */
  run(project: string, claimed: C): Promise<O>;
  /** Records the attempt and `next` while the lease still holds; false when it was lost (nothing written). */
  finish(project: string, claimed: C, outcome: O, next: Next): Promise<boolean>;
  /**
   * Optional: records several attempts of a project at once, as `finish` does each (results in order; a
   * promise among them fails only its own attempt).
   */
  finishMany?(
    project: string,
    ends: { claimed: C; outcome: O; next: Next }[],
  ): Promise<(boolean | Promise<boolean>)[]>;
  /** Extends the leases of the attempts in flight here. */
  renew(project: string, held: { token: string; claimed: C }[], secs: number): Promise<void>;
  /**
   * Lost work of a project: ends attempts whose lease expired (a failure, or dead when none is left) and
   * returns the items due again or due for `graceSecs` (their message lost).
   */
  recover(project: string, graceSecs: number): Promise<WorkItem[]>;
}
