import { describeError, log } from "../lib/log.ts";
import type { Claimed, Outcome, WorkArea, WorkBus, WorkItem, WorkKind } from "../lib/work_queue.ts";

/** What the puller needs of the work queue engine (workers/work_queue.ts). */
export interface PullTarget {
  /** The area of a kind, when it can claim due work from its table. */
  pullable(kind: WorkKind): WorkArea<Claimed, Outcome> | undefined;
  /** Slots free for pulled work in the area of a kind. */
  freeSlots(kind: WorkKind): number;
  /** Runs items claimed from the table. */
  adopt(kind: WorkKind, project: string, pulled: { item: WorkItem; token: string; claimed: Claimed }[]): void;
}

/** Options of {@linkcode WorkPuller}. */
export interface WorkPullerOptions {
  target: PullTarget;
  bus: WorkBus;
  /** Milliseconds between rounds over the projects woken (WORK_POLL_MS). */
  everyMs: number;
  /** Claims per statement at most. */
  batch?: number;
}

const KINDS: readonly WorkKind[] = ["job.run", "notification.send"];
/** A project ref as the platform makes them (the payload is checked before it is used). */
const REF = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * WorkPuller makes several instances on one PostgreSQL share the work of its tables. An instance that enqueues
 * work runs it itself at once when it has slots (the local fast path); when it has none, it announces the
 * project on the bus. The other instances mark it woken and, each round, claim due items of the woken projects
 * straight from the table (`FOR UPDATE SKIP LOCKED`) as far as their free slots go, until a claim comes back
 * short. The sweep wakes every project it visits, so work no instance announced (a retry, a delayed item whose
 * instance died, a lease that expired) is pulled within a sweep period. Between sweeps an idle instance costs
 * nothing but its listening connection: it claims only for the projects woken.
 */
export class WorkPuller {
  /** The projects to claim from, per kind. */
  private readonly woken = new Map<WorkKind, Set<string>>(KINDS.map((k) => [k, new Set<string>()]));
  /** Announcements to send in the next flush. */
  private readonly outbox = new Set<string>();
  private readonly instance = crypto.randomUUID();
  private flushTimer?: ReturnType<typeof setTimeout>;
  private lastFlush = 0;
  private roundTimer?: ReturnType<typeof setInterval>;
  private round: Promise<void> = Promise.resolve();
  private rounding = false;
  private unlisten: (() => Promise<void>) | null = null;
  private running = false;

  constructor(private readonly options: WorkPullerOptions) {}

  /** Starts the rounds and listens to the bus (resolves once listening). */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.roundTimer = setInterval(() => {
      if (!this.rounding) this.round = this.pullRound();
    }, this.options.everyMs);
    const unlisten = await this.options.bus.listen((payload) => this.heard(payload));
    if (this.running) this.unlisten = unlisten;
    else await unlisten().catch(() => {}); // stopped meanwhile
  }

  /** Stops claiming (the items already pulled run on in the engine) and stops listening. */
  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.roundTimer);
    clearTimeout(this.flushTimer);
    await this.round;
    await this.flush();
    await this.unlisten?.().catch(() => {});
  }

  /**
   * Tells the other instances that the project has work of this kind due now. Sent grouped, at most once a
   * round (`everyMs`): the first at once, the next ones at the end of the round, so a busy instance sends a few
   * notifications a second, not one per item. Once woken, the others pull until a claim comes back short.
   */
  announce(kind: WorkKind, project: string): void {
    if (!this.running) return;
    this.outbox.add(`${this.instance} ${kind} ${project}`);
    const wait = Math.max(0, this.lastFlush + this.options.everyMs - Date.now());
    this.flushTimer ??= setTimeout(() => void this.flush(), wait);
  }

  /** Marks a project to claim from in the next rounds. */
  wake(kind: WorkKind, project: string): void {
    if (this.running && this.options.target.pullable(kind)) this.woken.get(kind)?.add(project);
  }

  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    if (this.outbox.size === 0) return;
    this.lastFlush = Date.now();
    const payloads = [...this.outbox];
    this.outbox.clear();
    await this.options.bus.announce(payloads).catch((err) =>
      // The others find the work at their next sweep.
      log.warn("work announcement not sent", { cause: describeError(err) })
    );
  }

  private heard(payload: string): void {
    const [instance, kind, project] = payload.split(" ");
    if (instance === this.instance || !project || !REF.test(project)) return; // its own work runs here already
    if (KINDS.includes(kind as WorkKind)) this.wake(kind as WorkKind, project);
  }

  /** One round: for each woken project, claims as many due items as there are free slots. */
  private async pullRound(): Promise<void> {
    this.rounding = true;
    try {
      const batch = this.options.batch ?? 100;
      for (const [kind, projects] of this.woken) {
        const area = this.options.target.pullable(kind);
        if (!area) continue;
        for (const project of projects) {
          if (!this.running) return;
          const limit = Math.min(batch, this.options.target.freeSlots(kind));
          if (limit === 0) break; // full: the projects stay woken for the next round
          try {
            const pulled = await area.claimDue!(project, limit, area.leaseSecs);
            if (pulled.length < limit) projects.delete(project); // drained, until the next wake
            this.options.target.adopt(kind, project, pulled);
          } catch (err) {
            projects.delete(project); // its next wake or sweep tries again
            log.warn("work pull failed", { kind, project, cause: describeError(err) });
          }
        }
      }
    } finally {
      this.rounding = false;
    }
  }
}
