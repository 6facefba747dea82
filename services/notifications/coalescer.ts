import { enqueue } from "../../workers/queue.ts";

/** One notification to dispatch: its id, channel and the token that must still be current on its row. */
export interface DispatchItem {
  id: string;
  channel: string;
  dispatch: string;
}

/** Options of {@linkcode DispatchCoalescer}. */
export interface CoalescerOptions {
  kv: Deno.Kv;
  /** Items per KV message at most. */
  maxItems: number;
}

/**
 * DispatchCoalescer groups the immediate dispatches of one project made in the same turn of the event loop
 * into one KV message. Deno KV delivers about as many messages per second as it writes, so under load one
 * message per notification is the bottleneck; grouped, the cost of a message is shared. Each caller's
 * promise resolves only when the message holding its item is written, so a queued notification always has
 * its message on disk before the API answers.
 */
export class DispatchCoalescer {
  private readonly pending = new Map<
    string,
    { items: DispatchItem[]; waiters: PromiseWithResolvers<void>[]; timer: ReturnType<typeof setTimeout> }
  >();

  constructor(private readonly options: CoalescerOptions) {}

  /** Adds an item; resolves when its KV message is written. */
  add(project: string, item: DispatchItem): Promise<void> {
    let batch = this.pending.get(project);
    if (!batch) {
      const created = { items: [], waiters: [], timer: setTimeout(() => this.flush(project), 0) };
      this.pending.set(project, created);
      batch = created;
    }
    const waiter = Promise.withResolvers<void>();
    batch.items.push(item);
    batch.waiters.push(waiter);
    if (batch.items.length >= this.options.maxItems) {
      clearTimeout(batch.timer);
      this.flush(project);
    }
    return waiter.promise;
  }

  private flush(project: string): void {
    const batch = this.pending.get(project);
    if (!batch) return;
    this.pending.delete(project);
    enqueue(this.options.kv, { kind: "notification.send", project, items: batch.items }).then(
      () => batch.waiters.forEach((w) => w.resolve()),
      (err) => batch.waiters.forEach((w) => w.reject(err)),
    );
  }

  /** Writes whatever is pending now. */
  async drain(): Promise<void> {
    const waits = [...this.pending.values()].flatMap((b) => b.waiters.map((w) => w.promise.catch(() => {})));
    for (const [project, batch] of this.pending) {
      clearTimeout(batch.timer);
      this.flush(project);
    }
    await Promise.all(waits);
  }
}
