import type { Databases } from "../../db/databases.ts";
import type { Db } from "../../db/driver.ts";
import { enqueue, type QueueMessageOf } from "../../workers/queue.ts";
import { AppError, errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import { backoffMs } from "../../lib/backoff.ts";
import type { NetGuard } from "./net_guard.ts";
import type { Channel, OutboundMessage, ProviderResult } from "./providers/provider.ts";
import { ProviderRegistry } from "./providers/registry.ts";
import { DispatchCoalescer, type DispatchItem } from "./coalescer.ts";
import { renderTemplate } from "./render.ts";
import { Semaphore } from "../../lib/semaphore.ts";
import { type NotifySettings, SettingsStore } from "./settings.ts";
import {
  claim,
  countToday,
  expireLeases,
  findByIdempotencyKey,
  finishAttempt,
  getNotification,
  insertNotification,
  type Next,
  type NotificationRow,
  overdue,
  renewLeases,
  requeue,
} from "./store.ts";
import { getTemplate, renderWith } from "./templates.ts";

/** A send request (docs/notifications.md). */
export interface SendInput {
  channel: Channel;
  recipient: string;
  body?: string;
  subject?: string;
  templateId?: string;
  variables?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
  /** Webhook: the event name. */
  event?: string;
  /** Webhook: the payload (string or object). */
  payload?: unknown;
}

/** Where a send came from, when a rule made it. */
export interface SendOrigin {
  ruleId?: string;
  eventId?: string;
  delaySecs?: number;
}

/** Options of {@linkcode NotificationService}. */
export interface NotificationServiceOptions {
  dbs: Databases;
  kv: Deno.Kv;
  settings: SettingsStore;
  guard: NetGuard;
  /** Attempts in flight at most per channel, in this process. */
  concurrency: number;
  /** Lease of an attempt in flight, renewed every third of it while the send runs. */
  leaseSecs: number;
}

const EMAIL = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:]+$/;
const PHONE = /^\+[1-9]\d{6,14}$/;
const MAX_DELAY_MS = 60 * 60 * 1000;

/**
 * NotificationService sends, retries and delivers notifications. The project database holds the state of
 * record; the KV queue carries `notification.send` messages (immediate sends of a project grouped), each item
 * with a `dispatch` token that must match the row for the attempt to happen, so duplicate or stale
 * deliveries do nothing.
 */
export class NotificationService {
  private readonly settingsCache = new TtlCache<string, NotifySettings>({ ttlMs: 5_000, maxEntries: 1000 });
  private readonly providers: ProviderRegistry;
  private readonly lanes: Record<Channel, Semaphore>;
  private readonly coalescer: DispatchCoalescer;
  /** Whether this process runs the dispatcher (so it may attempt its own immediate sends at once). */
  private dispatching = false;
  private readonly localInFlight = new Set<Promise<void>>();
  /** Dispatches this process already attempted: their KV copies are skipped without a database call. */
  private readonly handledLocally = new TtlCache<string, true>({ ttlMs: 10 * 60_000, maxEntries: 200_000 });
  /** Attempts in flight here, by project: notification id → attempt number (their leases are renewed). */
  private readonly held = new Map<string, Map<string, number>>();
  private renewTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly options: NotificationServiceOptions) {
    this.providers = new ProviderRegistry(options.guard, Math.max(1, Math.min(options.concurrency, 10)));
    this.coalescer = new DispatchCoalescer({ kv: options.kv, maxItems: 50 });
    this.lanes = {
      email: new Semaphore(options.concurrency),
      sms: new Semaphore(options.concurrency),
      push: new Semaphore(options.concurrency),
      webhook: new Semaphore(options.concurrency),
    };
  }

  /** The settings store (for the settings routes). */
  get settingsStore(): SettingsStore {
    return this.options.settings;
  }

  /** A project's settings, cached for 5 seconds. */
  async settings(ref: string, db?: Db): Promise<NotifySettings> {
    const hit = this.settingsCache.get(ref);
    if (hit) return hit;
    const loaded = await this.options.settings.load(db ?? await this.options.dbs.project(ref));
    this.settingsCache.set(ref, loaded);
    return loaded;
  }

  /** Forgets the cached settings of a project after a change. */
  invalidateSettings(ref: string): void {
    this.settingsCache.delete(ref);
  }

  private validateRecipient(input: SendInput): void {
    const r = input.recipient;
    const bad = (what: string) =>
      errors.validation(`recipient: must be ${what} for channel "${input.channel}"`);
    if (input.channel === "email" && !EMAIL.test(r)) throw bad("an email address");
    if (input.channel === "sms" && !PHONE.test(r)) throw bad("a phone number in E.164 form (+15551234567)");
    if (input.channel === "push" && !/^((fcm|apns):)?[A-Za-z0-9_:\-.]{8,4096}$/.test(r)) {
      throw bad("a device token");
    }
    if (input.channel === "webhook") {
      let url: URL;
      try {
        url = new URL(r);
      } catch {
        throw bad("an http(s) URL");
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw bad("an http(s) URL");
      if (url.username || url.password) throw bad("a URL without credentials");
    }
  }

  private async content(db: Db, input: SendInput): Promise<{ subject: string | null; body: string | null }> {
    const variables = input.variables ?? {};
    if (input.templateId) {
      const template = await getTemplate(db, input.templateId).catch((err) => {
        if (err instanceof AppError && err.status === 404) {
          throw errors.validation(`templateId: template "${input.templateId}" does not exist`);
        }
        throw err;
      });
      if (template.channel !== input.channel) {
        throw errors.validation(`templateId: the template is for channel "${template.channel}"`);
      }
      const rendered = await renderWith(template, variables);
      return { subject: input.subject ?? rendered.subject, body: rendered.body };
    }
    if (input.channel !== "webhook" && (input.body === undefined || input.body === "")) {
      throw errors.validation("body: required when there is no templateId");
    }
    if (input.variables) {
      return {
        subject: input.subject ? await renderTemplate("subject", input.subject, variables) : null,
        body: input.body !== undefined ? await renderTemplate("body", input.body, variables) : null,
      };
    }
    return { subject: input.subject ?? null, body: input.body ?? null };
  }

  /**
   * Queues one notification (or stores it `suppressed` when the channel's daily quota is reached). A known
   * idempotency key within 24 h returns the first notification and sends nothing.
   */
  async send(ref: string, input: SendInput, origin: SendOrigin = {}): Promise<NotificationRow> {
    this.validateRecipient(input);
    if (input.channel === "webhook" && !input.event) throw errors.validation("event: required for a webhook");
    const db = await this.options.dbs.project(ref);
    if (input.idempotencyKey) {
      const existing = await findByIdempotencyKey(db, input.idempotencyKey);
      if (existing) return existing;
    }
    const { subject, body } = await this.content(db, input);
    const settings = await this.settings(ref, db);
    const quota = settings.quotas[input.channel];
    const dispatchId = crypto.randomUUID();
    const base = {
      channel: input.channel,
      recipient: input.recipient,
      subject,
      body,
      event: input.event ?? null,
      payload: input.payload ?? null,
      templateId: input.templateId ?? null,
      variables: input.variables ?? {},
      metadata: input.metadata ?? {},
      idempotencyKey: input.idempotencyKey ?? null,
      ruleId: origin.ruleId ?? null,
      eventId: origin.eventId ?? null,
      maxAttempts: settings.retry.max_attempts,
      delaySecs: origin.delaySecs ?? 0,
    };
    const row = quota === null
      ? await insertNotification(db, { ...base, suppressedReason: null, dispatchId })
      : await db.transaction(async (tx) => {
        // One sender at a time per channel while a quota applies, so the count cannot be overtaken.
        await tx.query("select pg_advisory_xact_lock(hashtext($1))", [
          `notifications.quota.${input.channel}`,
        ]);
        const used = await countToday(tx, input.channel);
        const reason = used >= quota
          ? `Daily quota of ${quota} ${input.channel} notifications reached`
          : null;
        return await insertNotification(tx, {
          ...base,
          suppressedReason: reason,
          dispatchId: reason ? null : dispatchId,
        });
      });
    if (!row) {
      const existing = await findByIdempotencyKey(db, input.idempotencyKey!);
      if (existing) return existing;
      throw errors.conflict("Idempotency key is being used by a concurrent send");
    }
    if (row.status === "queued") await this.schedule(ref, row, dispatchId, (origin.delaySecs ?? 0) * 1000);
    return row;
  }

  /** Puts a dispatch on the queue: grouped with others when immediate, alone when delayed. */
  private async schedule(
    ref: string,
    n: { id: string; channel: Channel },
    dispatch: string,
    delayMs: number,
  ): Promise<void> {
    const item: DispatchItem = { id: n.id, channel: n.channel, dispatch };
    if (delayMs <= 0) {
      await this.coalescer.add(ref, item); // durable first: the KV copy is the backstop
      if (this.dispatching) this.attemptNow(ref, item);
      return;
    }
    await enqueue(this.options.kv, { kind: "notification.send", project: ref, items: [item] }, {
      delayMs,
      keysIfUndelivered: [["notifications", "undelivered", ref, n.id]],
    });
  }

  /**
   * The local fast path: KV takes tens of milliseconds to hand a message over, so a process that runs the
   * dispatcher attempts its own immediate sends at once. The KV copy then finds the work done (skipped from
   * memory here, or by the row's token elsewhere); if the local attempt fails to record, the copy does it.
   */
  private attemptNow(ref: string, item: DispatchItem): void {
    const key = `${item.id}/${item.dispatch}`;
    this.handledLocally.set(key, true); // the KV copy skips it: under load it would otherwise double the work
    const run = (async () => {
      const db = await this.options.dbs.project(ref);
      if (!await this.attempt(ref, db, item, true)) this.handledLocally.delete(key); // abandoned: stopping
    })().catch(async (err) => {
      // The attempt could not be recorded: hand it back to the queue, which retries it.
      this.handledLocally.delete(key);
      log.warn("local dispatch failed; the queue will retry", { cause: describeError(err) });
      await enqueue(this.options.kv, { kind: "notification.send", project: ref, items: [item] }, {
        delayMs: 1000,
      })
        .catch(() => {}); // and if KV fails too, the sweeper finds the row
    });
    this.localInFlight.add(run);
    run.finally(() => this.localInFlight.delete(run));
  }

  /**
   * Turns dispatching on when the dispatcher starts here (with the renewal of leases), off when it stops:
   * then attempts not yet started are left to the queue and this waits for the attempts in flight.
   */
  async setDispatching(on: boolean): Promise<void> {
    this.dispatching = on;
    if (on && this.renewTimer === undefined) {
      this.renewTimer = setInterval(() => void this.renew(), (this.options.leaseSecs * 1000) / 3);
    }
    if (!on) {
      while (this.localInFlight.size > 0) await Promise.all([...this.localInFlight]);
      // Sends the queue handed over are in the lanes too; their leases are renewed until they end.
      while (Object.values(this.lanes).some((lane) => lane.running > 0)) {
        await new Promise((r) => setTimeout(r, 20));
      }
      clearInterval(this.renewTimer);
      this.renewTimer = undefined;
    }
  }

  /** Extends the leases of the attempts in flight here, so a long send is not taken over. */
  private async renew(): Promise<void> {
    for (const [ref, attempts] of this.held) {
      if (attempts.size === 0) continue;
      const held = [...attempts].map(([id, attempt]) => ({ id, attempt }));
      try {
        await renewLeases(await this.options.dbs.project(ref), held, this.options.leaseSecs);
      } catch (err) {
        log.warn("notification lease renewal failed", { project: ref, cause: describeError(err) });
      }
    }
  }

  /** Puts a `failed` or `dead_lettered` notification back in the queue (409 from any other status). */
  async retry(ref: string, id: string, from: ("failed" | "dead_lettered")[]): Promise<NotificationRow> {
    const db = await this.options.dbs.project(ref);
    const dispatchId = crypto.randomUUID();
    const settings = await this.settings(ref, db);
    const row = await requeue(db, id, { from, dispatchId, attempts: settings.retry.max_attempts });
    if (!row) {
      const current = await getNotification(db, id);
      if (!current) throw errors.notFound(`Notification "${id}" does not exist`);
      throw errors.conflict(
        `Notification "${id}" is ${current.status}; only ${from.join(" or ")} notifications can be retried`,
      );
    }
    await this.schedule(ref, row, dispatchId, 0);
    return row;
  }

  /**
   * The queue handler of `notification.send`: one attempt per item, concurrently within each channel's lane.
   * If any item could not be recorded the handler throws, KV delivers the message again, and the items already
   * done are skipped because their tokens no longer match.
   */
  async deliver(message: QueueMessageOf<"notification.send">): Promise<void> {
    let db: Db;
    try {
      db = await this.options.dbs.project(message.project);
    } catch (err) {
      log.warn("notification delivery postponed: project database unavailable", {
        project: message.project,
        cause: describeError(err),
      });
      throw err; // KV retries, then parks it under keysIfUndelivered
    }
    const todo = message.items.filter((item) => !this.handledLocally.get(`${item.id}/${item.dispatch}`));
    const results = await Promise.allSettled(todo.map((item) => this.attempt(message.project, db, item)));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  /** One attempt at an item; false when a local attempt was abandoned because the dispatcher is stopping. */
  private async attempt(project: string, db: Db, item: DispatchItem, local = false): Promise<boolean> {
    const lane = this.lanes[item.channel as Channel] ?? this.lanes.webhook;
    return await lane.run(async () => {
      if (!this.dispatching) {
        // Stopping: work not yet started is left to the queue (the next process gets it).
        if (local) return false;
        throw new Error("Dispatcher is stopping");
      }
      const row = await claim(db, item.id, item.dispatch, this.options.leaseSecs);
      if (!row) return true; // already handled, superseded by a retry, or being sent elsewhere
      const held = this.held.get(project) ?? new Map<string, number>();
      this.held.set(project, held.set(row.id, row.attempts));
      try {
        await this.sendClaimed(project, db, item, row);
        return true;
      } finally {
        if (held.get(row.id) === row.attempts) held.delete(row.id);
      }
    });
  }

  /** Sends a claimed notification once and records the attempt. */
  private async sendClaimed(
    project: string,
    db: Db,
    item: DispatchItem,
    row: NotificationRow,
  ): Promise<void> {
    const settings = await this.settings(project, db);
    const outbound: OutboundMessage = {
      id: row.id,
      channel: row.channel,
      recipient: row.recipient,
      subject: row.subject,
      body: row.body,
      event: row.event,
      payload: row.payload,
      metadata: row.metadata,
      attempt: row.attempts,
    };
    const startedAt = new Date();
    const started = performance.now();
    const routed = this.providers.for(project, settings).route(outbound);
    let result: ProviderResult;
    if ("outcome" in routed) result = routed;
    else {
      try {
        result = await routed.provider.send(routed.message, AbortSignal.timeout(30_000));
      } catch (err) {
        result = {
          provider: routed.provider.name,
          outcome: "retryable_error",
          error: `Provider failed: ${describeError(err)}`,
          response: "",
          request: {},
        };
      }
    }
    const next = this.nextStep(row, result, settings);
    const ok = await finishAttempt(db, {
      row,
      dispatch: item.dispatch,
      result,
      next,
      startedAt,
      durationMs: performance.now() - started,
    });
    if (!ok) {
      // Its lease expired meanwhile (a stalled process): the sweep gave the notification to a new attempt.
      log.warn("notification attempt finished after losing its lease", { project, notification: row.id });
    }
    if (ok && next.status === "failed") {
      await this.schedule(project, row, next.dispatchId, next.retryInMs);
    }
  }

  private nextStep(row: NotificationRow, result: ProviderResult, settings: NotifySettings): Next {
    if (result.outcome === "success") return { status: result.confirmed ? "delivered" : "sent" };
    if (result.outcome === "permanent_error" || row.attempts >= row.max_attempts) {
      return { status: "dead_lettered" };
    }
    const backoff = backoffMs(row.attempts, { baseMs: settings.retry.base_delay_ms, capMs: MAX_DELAY_MS });
    const retryInMs = Math.min(MAX_DELAY_MS, Math.max(backoff, result.retryAfterMs ?? 0));
    return { status: "failed", retryInMs, dispatchId: crypto.randomUUID() };
  }

  /**
   * Recovers lost work of a project: sends whose lease expired (their process stopped mid-send) are recorded
   * as failed attempts and retried at once, and notifications whose queue message is overdue by `graceSecs`
   * (a lost enqueue, a message KV had handed to a process that stopped) are re-enqueued. Duplicates are
   * harmless: the row's token and status let only one delivery act.
   */
  async sweep(ref: string, graceSecs = 120): Promise<number> {
    const db = await this.options.dbs.project(ref);
    const expired = await expireLeases(db, this.options.leaseSecs, 1000);
    const stale = await overdue(db, graceSecs, 1000);
    for (const { id, channel, dispatch_id } of [...expired, ...stale]) {
      await this.schedule(ref, { id, channel }, dispatch_id, 0);
    }
    return expired.length + stale.length;
  }

  /** Closes pooled provider connections after writing pending dispatches. */
  async close(): Promise<void> {
    await this.setDispatching(false);
    await this.coalescer.drain();
    await this.providers.close();
  }
}
