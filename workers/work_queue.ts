import { backoffMs } from "../lib/backoff.ts";
import { Batcher } from "../lib/batcher.ts";
import { describeError, log } from "../lib/log.ts";
import { Semaphore } from "../lib/semaphore.ts";
import { TtlCache } from "../lib/ttl_cache.ts";
import {
  type Claimed,
  newToken,
  type Next,
  type Outcome,
  type WorkArea,
  type WorkItem,
  type WorkKind,
  type WorkMessage,
  type WorkQueue,
} from "../lib/work_queue.ts";

/** When an area's sweep runs. */
export interface SweepSchedule {
  /** Milliseconds between sweeps (0: only the one at start). */
  everyMs: number;
  /** Later sweeps leave this many seconds to the queue message of work that just became due. */
  graceSecs: number;
}

/** What the engine tells the puller (workers/work_pull.ts). */
export interface WorkPullHooks {
  /** Work of the project waits here for a slot: the other instances may pull it. */
  announce(kind: WorkKind, project: string): void;
  /** The sweep visited the project: pull what is due there. */
  wake(kind: WorkKind, project: string): void;
}

/** An attempt in flight here: its claim, and what ends its hold (its lease is renewed until then). */
interface Held {
  claimed: Claimed;
  release(): void;
}

interface AreaState {
  area: WorkArea<Claimed, Outcome>;
  /** The claims and finishes of one project made together, in one statement each (when the area can). */
  claims?: Batcher<{ item: WorkItem; token: string }, Claimed | null>;
  finishes?: Batcher<{ claimed: Claimed; outcome: Outcome; next: Next }, boolean>;
  sweep: SweepSchedule;
  lanes: Map<string, Semaphore>;
  /** Attempts in flight here, by project and lease token (their leases are renewed). */
  held: Map<string, Map<string, Claimed>>;
  renewTimer?: ReturnType<typeof setInterval>;
  sweepTimer?: ReturnType<typeof setInterval>;
  sweeping: Promise<void>;
}

/** Claims or finishes per statement at most. */
const BATCH_MAX = 200;
/**
 * Statements of one kind in flight per area and project: while they run, the next calls gather into the next
 * batch. Two keep a pool's second connection busy; on a single connection the second waits its turn.
 */
const BATCHES_IN_FLIGHT = 2;

function isMessage(value: unknown): value is WorkMessage {
  const m = value as WorkMessage | null;
  return typeof m === "object" && m !== null && typeof m.kind === "string" && typeof m.project === "string" &&
    Array.isArray(m.items);
}

/**
 * WorkEngine is the one consumer of the KV work queue: the single `kv.listenQueue` of the process, routing each
 * message to its area. Per item it claims the row with a lease, runs one attempt, and records what follows
 * (done, a retry with jittered backoff, or dead when no attempt is left); claims and finishes made together
 * share one statement when the area can batch them. It runs the local fast path of immediate items, renews
 * leases while attempts run, sweeps for lost work, and stops cleanly.
 */
export class WorkEngine {
  private readonly areas = new Map<WorkKind, AreaState>();
  private dispatching = false;
  private listening: Promise<void> | null = null;
  /** Deliveries and local attempts in flight. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Items this process ran on the fast path: their KV copies are skipped without a database call. */
  private readonly handledLocally = new TtlCache<string, true>({ ttlMs: 10 * 60_000, maxEntries: 200_000 });

  /** With instances sharing PostgreSQL: told of work this process cannot start at once, and of each sweep. */
  private puller: WorkPullHooks | null = null;

  constructor(private readonly queue: WorkQueue, private readonly projects: () => Promise<string[]>) {}

  /** Attaches (or with null, detaches) the puller that shares work with other instances (workers/work_pull.ts). */
  pullWith(puller: WorkPullHooks | null): this {
    this.puller = puller;
    return this;
  }

  /** Adds an area (one per kind), with when its sweep runs. */
  register<C extends Claimed, O extends Outcome>(area: WorkArea<C, O>, sweep: SweepSchedule): this {
    if (this.areas.has(area.kind)) throw new Error(`The area of "${area.kind}" is already registered`);
    const open = area as unknown as WorkArea<Claimed, Outcome>;
    const batch = { max: BATCH_MAX, parallel: BATCHES_IN_FLIGHT };
    this.areas.set(area.kind, {
      area: open,
      claims: open.claimMany &&
        new Batcher((project, claims) => open.claimMany!(project, claims, open.leaseSecs), batch),
      finishes: open.finishMany && new Batcher((project, ends) => open.finishMany!(project, ends), batch),
      sweep,
      lanes: new Map(),
      held: new Map(),
      sweeping: Promise.resolve(),
    });
    return this;
  }

  /** Starts listening, the fast path, lease renewal and the sweeps. KV allows one listener per connection. */
  start(): void {
    if (this.listening) return;
    this.dispatching = true;
    this.listening = this.queue.kv.listenQueue((raw: unknown) => this.dispatch(raw)).catch((err) => {
      if (this.dispatching) log.error("queue listener ended", { cause: describeError(err) });
    });
    for (const [kind, state] of this.areas) {
      this.queue.attach(kind, (project, item) => this.runLocally(state, project, item));
      const renewEvery = Math.max(200, (state.area.leaseSecs * 1000) / 3);
      state.renewTimer = setInterval(() => void this.renew(state), renewEvery);
      // At start, whatever is due is re-enqueued at once: the previous process may have stopped mid-attempt
      // or just after KV handed it a message.
      state.sweeping = this.sweep(state, 0);
      if (state.sweep.everyMs > 0) {
        const later = () => (state.sweeping = this.sweep(state, state.sweep.graceSecs));
        state.sweepTimer = setInterval(later, state.sweep.everyMs);
      }
    }
  }

  /** Messages and local attempts being handled now. */
  get busy(): number {
    return this.inFlight.size;
  }

  /**
   * Stops: no sweep, no new attempt (work not yet started is left to the queue, for the next process), waits
   * for the attempts in flight (their leases renewed until they end), then writes the pending messages.
   */
  async stop(): Promise<void> {
    this.dispatching = false;
    const states = [...this.areas.values()];
    for (const state of states) {
      this.queue.attach(state.area.kind, null);
      clearInterval(state.sweepTimer); // the renewal goes on while attempts finish
    }
    await Promise.all(states.map((s) => s.sweeping));
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight].map((p) => p.catch(() => {})));
    for (const state of states) clearInterval(state.renewTimer);
    await this.queue.drain();
  }

  private track<T>(work: Promise<T>): Promise<T> {
    const tracked = work.catch(() => {}).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    return work;
  }

  private dispatch(raw: unknown): Promise<void> {
    if (!this.dispatching) {
      // Put a copy back (delayed) before acknowledging this one: the copy is on disk before the ack, so the
      // message survives however soon KV closes. A duplicate is harmless: claims check the row first.
      // If KV is closing under us, the copy fails: leave this one unacknowledged (never settled, nothing thrown
      // into KV's log) and KV delivers it again after the restart.
      return isMessage(raw)
        ? this.queue.put(raw, 1000).catch(() => new Promise<void>(() => {}))
        : Promise.resolve();
    }
    const state = isMessage(raw) ? this.areas.get(raw.kind) : undefined;
    if (!state) {
      log.warn("queue message dropped: no area handles it", {
        kind: String((raw as { kind?: unknown })?.kind),
      });
      return Promise.resolve();
    }
    return this.track(
      this.deliver(state, raw as WorkMessage).catch((err) => {
        log.warn("queue delivery failed; KV delivers it again", {
          kind: state.area.kind,
          cause: describeError(err),
        });
        // A rejection is how KV is told to deliver again; it prints what it is given, so it gets no stack.
        throw stackless(`queue delivery failed (${describeError(err)}); KV delivers it again`);
      }),
    );
  }

  /**
   * One attempt per item, concurrently within lanes. If any item fails, KV delivers the message again and the
   * items already done are skipped by their claims.
   */
  private async deliver(state: AreaState, message: WorkMessage): Promise<void> {
    const todo = message.items.filter((item) => {
      const key = this.keyOf(state, item);
      if (!this.handledLocally.get(key)) return true;
      this.handledLocally.delete(key); // only this copy is skipped
      return false;
    });
    const results = await Promise.allSettled(todo.map((item) => this.attempt(state, message.project, item)));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    if (results.some((r) => r.status === "fulfilled" && !r.value)) {
      throw new Error("The work queue is stopping");
    }
  }

  private keyOf(state: AreaState, item: WorkItem): string {
    return `${state.area.kind}/${item.id}/${item.token}`;
  }

  /**
   * The local fast path: an immediate item enqueued here starts at once (KV takes tens of milliseconds to hand
   * it back); its KV copy is then skipped from memory here, or finds the row claimed elsewhere.
   */
  private runLocally(state: AreaState, project: string, item: WorkItem): void {
    if (!this.dispatching) return;
    const key = this.keyOf(state, item);
    this.handledLocally.set(key, true);
    const attempt = this.attempt(state, project, item);
    // Waiting for a slot here: another instance with free slots may take it (its claim skips what runs here).
    if (this.freeSlots(state.area.kind) === 0) this.puller?.announce(state.area.kind, project);
    void this.track(
      attempt.then((started) => {
        if (!started) this.handledLocally.delete(key); // stopping: the KV copy or the next process runs it
      }).catch(async (err) => {
        // Not recorded: hand it back to the queue (if KV fails too, the sweep finds the row).
        this.handledLocally.delete(key);
        log.warn("local attempt failed; the queue will retry", {
          kind: state.area.kind,
          cause: describeError(err),
        });
        await this.queue.enqueue(state.area.kind, project, item, 1000).catch(() => {});
      }),
    );
  }

  /**
   * One attempt at an item when its row still calls for it; false when not started because stopping. The lane's
   * slot is held until the end is recorded: attempts whose outcome is not yet written (those a kill would run
   * again) stay within the concurrency.
   */
  private async attempt(state: AreaState, project: string, item: WorkItem): Promise<boolean> {
    const { area } = state;
    const laneKey = item.lane ?? "";
    let lane = state.lanes.get(laneKey);
    if (!lane) state.lanes.set(laneKey, lane = new Semaphore(area.concurrency));
    return await lane.run(async () => {
      if (!this.dispatching) return false;
      const token = newToken();
      const claimed = state.claims
        ? await state.claims.call(project, { item, token })
        : await area.claim(project, item, { token, secs: area.leaseSecs });
      if (!claimed) return true; // done, running elsewhere, not due, or superseded: nothing to do
      await this.execute(state, project, item, this.hold(state, project, token, claimed));
      return true;
    });
  }

  /** Registers an attempt in flight here (its lease is renewed until `release`). */
  private hold(state: AreaState, project: string, token: string, claimed: Claimed): Held {
    const held = state.held.get(project) ?? new Map<string, Claimed>();
    state.held.set(project, held.set(token, claimed));
    return { claimed, release: () => held.delete(token) };
  }

  /** Runs the claimed attempt and records what follows, then releases its hold. */
  private async execute(state: AreaState, project: string, item: WorkItem, held: Held): Promise<void> {
    const { area } = state;
    const { claimed } = held;
    try {
      const outcome = await area.run(project, claimed);
      const next = this.next(area, claimed, outcome, item);
      const recorded = state.finishes
        ? await state.finishes.call(project, { claimed, outcome, next })
        : await area.finish(project, claimed, outcome, next);
      if (!recorded) {
        // Its lease expired meanwhile (a stalled process): the sweep gave the row to a new attempt.
        log.warn("attempt finished after losing its lease", { kind: area.kind, project, id: item.id });
      } else if (next.status === "failed") {
        await this.queue.enqueue(area.kind, project, next.retry, next.retryInMs).catch((err) =>
          log.warn("retry not enqueued; the sweep will find it", {
            kind: area.kind,
            cause: describeError(err),
          })
        );
      }
    } finally {
      held.release();
    }
  }

  /**
   * Slots free for pulled work in an area: its concurrency less what its busiest lane runs and has waiting
   * (pulled items of any lane then start at once, or nearly).
   */
  freeSlots(kind: WorkKind): number {
    const state = this.areas.get(kind);
    if (!state || !this.dispatching) return 0;
    let busiest = 0;
    for (const lane of state.lanes.values()) busiest = Math.max(busiest, lane.running + lane.waiting);
    return Math.max(0, state.area.concurrency - busiest);
  }

  /** The area of a kind, when it can pull due work from its table. */
  pullable(kind: WorkKind): WorkArea<Claimed, Outcome> | undefined {
    const area = this.areas.get(kind)?.area;
    return area?.claimDue ? area : undefined;
  }

  /**
   * Runs items claimed straight from the table (already leased: they are held, so renewed, from now on, and
   * run to the end even if the engine stops meanwhile).
   */
  adopt(
    kind: WorkKind,
    project: string,
    pulled: { item: WorkItem; token: string; claimed: Claimed }[],
  ): void {
    const state = this.areas.get(kind);
    if (!state) return;
    for (const { item, token, claimed } of pulled) {
      const held = this.hold(state, project, token, claimed);
      const laneKey = item.lane ?? "";
      let lane = state.lanes.get(laneKey);
      if (!lane) state.lanes.set(laneKey, lane = new Semaphore(state.area.concurrency));
      void this.track(lane.run(() => this.execute(state, project, item, held))).catch((err) =>
        // Not recorded: the lease expires and the sweep hands the row to a new attempt.
        log.warn("pulled attempt failed", { kind, project, cause: describeError(err) })
      );
    }
  }

  /** Attempt accounting: success is done; a permanent error or the last attempt is dead; else a retry. */
  private next(area: WorkArea<Claimed, Outcome>, claimed: Claimed, outcome: Outcome, item: WorkItem): Next {
    if (outcome.ok) return { status: "done" };
    if (outcome.permanent || claimed.attempt >= claimed.maxAttempts) return { status: "dead" };
    const backoff = area.backoff(claimed);
    const retryInMs = Math.min(
      backoff.capMs,
      Math.max(backoffMs(claimed.attempt, backoff), outcome.retryAfterMs ?? 0),
    );
    return { status: "failed", retryInMs, retry: { ...item, token: newToken() } };
  }

  private async renew(state: AreaState): Promise<void> {
    for (const [project, held] of state.held) {
      if (held.size === 0) continue;
      const list = [...held].map(([token, claimed]) => ({ token, claimed }));
      await state.area.renew(project, list, state.area.leaseSecs).catch((err) =>
        log.warn("lease renewal failed", { kind: state.area.kind, project, cause: describeError(err) })
      );
    }
  }

  /** Re-enqueues the lost work of every project (duplicates are harmless: the claim lets one act). */
  private sweep(state: AreaState, graceSecs: number): Promise<void> {
    const { area } = state;
    const failed = (project?: string) => (err: unknown) =>
      log.warn("sweep failed", { kind: area.kind, project, cause: describeError(err) });
    return (async () => {
      for (const project of await this.projects()) {
        if (!this.dispatching) return;
        await area.recover(project, graceSecs).then((items) =>
          Promise.all(items.map((item) => this.queue.enqueue(area.kind, project, item)))
        ).catch(failed(project));
        // Work that no instance announced (a retry come due, a delayed item whose instance died) is pulled too.
        this.puller?.wake(area.kind, project);
      }
    })().catch(failed());
  }
}

/** An error whose printed form is its message alone (no stack: nothing of the code goes to a log). */
function stackless(message: string): Error {
  const err = new Error(message);
  err.stack = message;
  return err;
}
