import type { Databases } from "../../db/databases.ts";
import type { Db } from "../../db/driver.ts";
import { Batcher } from "../../lib/batcher.ts";
import { withDeadline } from "../../lib/deadline.ts";
import { AppError, errors } from "../../lib/errors.ts";
import { describeError } from "../../lib/log.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import type { Claimed, Next as WorkNext, Outcome, WorkArea, WorkQueue } from "../../lib/work_queue.ts";
import type { NetGuard } from "./net_guard.ts";
import type { Channel, OutboundMessage, ProviderResult } from "./providers/provider.ts";
import { ProviderRegistry } from "./providers/registry.ts";
import { checkConfigured, checkRecipient } from "./recipients.ts";
import { renderTemplate } from "./render.ts";
import { type NotifySettings, type SettingsPatch, SettingsStore } from "./settings.ts";
import {
  claim,
  claimDue,
  type ClaimedRow,
  claimMany,
  type EVENT_STATUSES,
  type EventRow,
  expireLeases,
  findByIdempotencyKey,
  finishAttempt,
  finishAttempts,
  getNotification,
  insertNotification,
  insertNotifications,
  insertUnderQuota,
  listAttempts,
  listDeadLetters,
  type ListFilter,
  listNotifications,
  listProviderLogs,
  type NewNotification,
  type Next,
  type NotificationRow,
  overdue,
  type Page,
  queueRows,
  type ReceiptResult,
  renewLeases,
  requeue,
  type Rule,
  type RuleInput,
  statsRows,
  type Template,
} from "./store.ts";
import { getTemplate, renderWith } from "./templates.ts";
import * as templates from "./templates.ts";
import * as rules from "./rules.ts";
import * as events from "./events.ts";
import { queueDepth, stats, WINDOWS } from "./queries.ts";
import { smsStatusCallback } from "./sms_status.ts";

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
  queue: WorkQueue;
  settings: SettingsStore;
  guard: NetGuard;
  /** Attempts in flight at most per channel, in this process. */
  concurrency: number;
  /** Lease of an attempt in flight, renewed every third of it while the send runs. */
  leaseSecs: number;
}

const MAX_DELAY_MS = 60 * 60 * 1000;
/** Writes per batch at most, and batches in flight per project (see Batcher). */
const WRITE_BATCH = { max: 200, parallel: 2 };

/** A notification claimed for one attempt, with its dispatch token and the project's retry base delay. */
type ClaimedNotification = ClaimedRow & Claimed & { dispatch: string; baseDelayMs: number };

/** How a send went: the provider's result, timed. */
type SendOutcome = Outcome & { result: ProviderResult; startedAt: Date; durationMs: number };

/** What {@linkcode finishAttempt} records of an attempt, from its outcome and what the engine decided follows. */
function attemptRecord(n: ClaimedNotification, outcome: SendOutcome, next: WorkNext) {
  const { result } = outcome;
  const status: Next = next.status === "done"
    ? { status: result.confirmed ? "delivered" : "sent" }
    : next.status === "dead"
    ? { status: "dead_lettered" }
    : { status: "failed", retryInMs: next.retryInMs, dispatchId: next.retry.token };
  return {
    row: n,
    dispatch: n.dispatch,
    result,
    next: status,
    startedAt: outcome.startedAt,
    durationMs: outcome.durationMs,
  };
}

/**
 * NotificationService sends, retries and delivers notifications. The project database holds the state of
 * record; the KV queue carries `notification.send` messages (immediate sends of a project grouped), each item
 * with a `dispatch` token that must match the row for the attempt to happen, so duplicate or stale
 * deliveries do nothing.
 */
export class NotificationService {
  private readonly settingsCache = new TtlCache<string, NotifySettings>({ ttlMs: 5_000, maxEntries: 1000 });
  private readonly providers: ProviderRegistry;
  /** The notifications' part of the work queue (run by the engine in workers/). */
  readonly work: WorkArea<ClaimedNotification, SendOutcome>;
  /** Sends made together (no quota, no idempotency key) are stored in one statement (each alone if it fails). */
  private readonly inserts = new Batcher<NewNotification, NotificationRow | null>(async (ref, rows) => {
    const db = await this.options.dbs.project(ref);
    return await insertNotifications(db, rows).catch(() => rows.map((n) => insertNotification(db, n)));
  }, WRITE_BATCH);

  constructor(private readonly options: NotificationServiceOptions) {
    this.providers = new ProviderRegistry(options.guard, Math.max(1, Math.min(options.concurrency, 10)));
    this.work = this.workArea();
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

  /**
   * Throws 400 unless `recipient` can receive on `channel` and the channel's provider is configured in the
   * project's settings (naming the settings to set): a send that could only dead-letter is refused up front.
   */
  async checkDeliverable(
    ref: string,
    channel: Channel,
    recipient: string,
    fields: { recipient: string; channel: string } = { recipient: "recipient", channel: "channel" },
  ): Promise<void> {
    checkRecipient(channel, recipient, fields.recipient);
    checkConfigured(await this.settings(ref), channel, recipient, fields.channel);
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
    checkRecipient(input.channel, input.recipient);
    if (input.channel === "webhook" && !input.event) throw errors.validation("event: required for a webhook");
    const db = await this.options.dbs.project(ref);
    checkConfigured(await this.settings(ref, db), input.channel, input.recipient);
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
      ? input.idempotencyKey
        ? await insertNotification(db, { ...base, suppressedReason: null, dispatchId })
        : await this.inserts.call(ref, { ...base, suppressedReason: null, dispatchId })
      : await insertUnderQuota(db, input.channel, quota, (reason) => ({
        ...base,
        suppressedReason: reason,
        dispatchId: reason ? null : dispatchId,
      }));
    if (!row) {
      const existing = await findByIdempotencyKey(db, input.idempotencyKey!);
      if (existing) return existing;
      throw errors.conflict("Idempotency key is being used by a concurrent send");
    }
    if (row.status === "queued") await this.schedule(ref, row, dispatchId, (origin.delaySecs ?? 0) * 1000);
    return row;
  }

  /** Puts a dispatch on the work queue (grouped with others when immediate); resolves once it is written. */
  private async schedule(
    ref: string,
    n: { id: string; channel: Channel },
    dispatch: string,
    delayMs: number,
  ): Promise<void> {
    await this.options.queue.enqueue(
      "notification.send",
      ref,
      { id: n.id, token: dispatch, lane: n.channel },
      delayMs,
    );
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
   * The notifications' part of the work queue: the engine in workers/ claims, sends and records through it.
   * An item's token is the row's `dispatch_id` and its lane the channel (each channel has its own concurrency).
   */
  private workArea(): WorkArea<ClaimedNotification, SendOutcome> {
    return {
      kind: "notification.send",
      concurrency: this.options.concurrency,
      leaseSecs: this.options.leaseSecs,
      backoff: (n) => ({ baseMs: n.baseDelayMs, capMs: MAX_DELAY_MS }),
      claim: async (ref, item, lease) => {
        const db = await this.options.dbs.project(ref);
        const row = await claim(db, item.id, item.token, lease.secs);
        if (!row) return null;
        const settings = await this.settings(ref, db);
        return {
          ...row,
          attempt: row.attempts,
          maxAttempts: row.max_attempts,
          dispatch: item.token,
          baseDelayMs: settings.retry.base_delay_ms,
        };
      },
      claimMany: async (ref, claims, secs) => {
        const db = await this.options.dbs.project(ref);
        const rows = await claimMany(
          db,
          claims.map((c) => ({ id: c.item.id, dispatch: c.item.token })),
          secs,
        );
        if (!rows.some(Boolean)) return rows.map(() => null);
        const settings = await this.settings(ref, db);
        return rows.map((row, i) =>
          row && {
            ...row,
            attempt: row.attempts,
            maxAttempts: row.max_attempts,
            dispatch: claims[i]!.item.token,
            baseDelayMs: settings.retry.base_delay_ms,
          }
        );
      },
      claimDue: async (ref, limit, secs) => {
        const db = await this.options.dbs.project(ref);
        const rows = await claimDue(db, limit, secs);
        if (rows.length === 0) return [];
        const settings = await this.settings(ref, db);
        return rows.map(({ dispatch_id, ...row }) => ({
          item: { id: row.id, token: dispatch_id, lane: row.channel },
          token: dispatch_id,
          claimed: {
            ...row,
            attempt: row.attempts,
            maxAttempts: row.max_attempts,
            dispatch: dispatch_id,
            baseDelayMs: settings.retry.base_delay_ms,
          },
        }));
      },
      run: (ref, n) => this.sendClaimed(ref, n),
      finish: async (ref, n, outcome, next) =>
        await finishAttempt(await this.options.dbs.project(ref), attemptRecord(n, outcome, next)),
      finishMany: async (ref, ends) => {
        const db = await this.options.dbs.project(ref);
        const records = ends.map((e) => attemptRecord(e.claimed, e.outcome, e.next));
        // One statement for the batch; if it fails, each alone, so one bad record fails only its own attempt.
        return await finishAttempts(db, records).catch(() => records.map((r) => finishAttempt(db, r)));
      },
      renew: async (ref, held, secs) =>
        await renewLeases(
          await this.options.dbs.project(ref),
          held.map((h) => ({ id: h.claimed.id, attempt: h.claimed.attempts })),
          secs,
        ),
      recover: async (ref, graceSecs) => {
        const db = await this.options.dbs.project(ref);
        const expired = await expireLeases(db, this.options.leaseSecs, 1000);
        const stale = await overdue(db, graceSecs, 1000);
        return [...expired, ...stale].map((n) => ({ id: n.id, token: n.dispatch_id, lane: n.channel }));
      },
    };
  }

  /** Sends a claimed notification once. */
  private async sendClaimed(project: string, row: ClaimedNotification): Promise<SendOutcome> {
    const settings = await this.settings(project);
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
        result = await withDeadline(null, 30_000, (signal) => routed.provider.send(routed.message, signal));
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
    return {
      ok: result.outcome === "success",
      permanent: result.outcome === "permanent_error",
      retryAfterMs: result.retryAfterMs,
      result,
      startedAt,
      durationMs: performance.now() - started,
    };
  }

  // The area's API for the routes: each call names its project, never a database.

  /** Lists notifications with filters, search and sort. */
  async list(ref: string, f: ListFilter): Promise<NotificationRow[]> {
    return await listNotifications(await this.options.dbs.project(ref), f);
  }

  /** A notification (404 when unknown). */
  async get(ref: string, id: string): Promise<NotificationRow> {
    const row = await getNotification(await this.options.dbs.project(ref), id);
    if (!row) throw errors.notFound(`Notification "${id}" does not exist`);
    return row;
  }

  /** The attempts of a notification (404 when unknown). */
  async attempts(ref: string, id: string): Promise<Record<string, unknown>[]> {
    const db = await this.options.dbs.project(ref);
    if (!await getNotification(db, id)) throw errors.notFound(`Notification "${id}" does not exist`);
    return await listAttempts(db, id);
  }

  /** Dead letters, newest first. */
  async deadLetters(
    ref: string,
    f: Page & { channel?: Channel; search?: string },
  ): Promise<NotificationRow[]> {
    return await listDeadLetters(await this.options.dbs.project(ref), f);
  }

  /** Provider logs, newest first. */
  async providerLogs(
    ref: string,
    f: Page & { channel?: Channel; status?: "success" | "error" },
  ): Promise<Record<string, unknown>[]> {
    return await listProviderLogs(await this.options.dbs.project(ref), f);
  }

  /** The queue depth. */
  async queueDepth(ref: string): Promise<ReturnType<typeof queueDepth>> {
    return queueDepth(await queueRows(await this.options.dbs.project(ref)));
  }

  /** The stats over a window. */
  async stats(
    ref: string,
    window: keyof typeof WINDOWS,
    channel?: Channel,
  ): Promise<ReturnType<typeof stats>> {
    return stats(
      await statsRows(await this.options.dbs.project(ref), WINDOWS[window], channel),
      window,
      channel,
    );
  }

  /** The public settings (secrets shown as `*_set`), read afresh. */
  async publicSettings(ref: string): Promise<ReturnType<typeof SettingsStore.publicView>> {
    return SettingsStore.publicView(await this.options.settings.load(await this.options.dbs.project(ref)));
  }

  /** Applies a settings patch; returns the public settings after it. */
  async patchSettings(
    ref: string,
    patch: SettingsPatch,
  ): Promise<ReturnType<typeof SettingsStore.publicView>> {
    const db = await this.options.dbs.project(ref);
    await this.options.settings.patch(db, patch);
    this.invalidateSettings(ref);
    return SettingsStore.publicView(await this.options.settings.load(db));
  }

  /** Templates by name. */
  async listTemplates(ref: string): Promise<Template[]> {
    return await templates.listTemplates(await this.options.dbs.project(ref));
  }

  /** A template (404 when unknown). */
  async getTemplate(ref: string, id: string): Promise<Template> {
    return await templates.getTemplate(await this.options.dbs.project(ref), id);
  }

  /** Creates a template. */
  async createTemplate(
    ref: string,
    input: Parameters<typeof templates.createTemplate>[1],
  ): Promise<Template> {
    return await templates.createTemplate(await this.options.dbs.project(ref), input);
  }

  /** Updates a template. */
  async updateTemplate(
    ref: string,
    id: string,
    input: Parameters<typeof templates.updateTemplate>[2],
  ): Promise<Template> {
    return await templates.updateTemplate(await this.options.dbs.project(ref), id, input);
  }

  /** Deletes a template (404 when unknown). */
  async deleteTemplate(ref: string, id: string): Promise<void> {
    await templates.deleteTemplate(await this.options.dbs.project(ref), id);
  }

  /** Rules, newest first. */
  async listRules(ref: string): Promise<Rule[]> {
    return await rules.listRules(await this.options.dbs.project(ref));
  }

  /** A rule (404 when unknown). */
  async getRule(ref: string, id: string): Promise<Rule> {
    return await rules.getRule(await this.options.dbs.project(ref), id);
  }

  /** Creates a rule. */
  async createRule(ref: string, input: RuleInput): Promise<Rule> {
    return await rules.createRule(await this.options.dbs.project(ref), input);
  }

  /** Changes the fields given of a rule. */
  async updateRule(ref: string, id: string, patch: Partial<RuleInput>): Promise<Rule> {
    return await rules.updateRule(await this.options.dbs.project(ref), id, patch);
  }

  /** Deletes a rule (404 when unknown). */
  async deleteRule(ref: string, id: string): Promise<void> {
    await rules.deleteRule(await this.options.dbs.project(ref), id);
  }

  /** Rules-engine events, newest first. */
  async listEvents(ref: string, f: Page & { status?: typeof EVENT_STATUSES[number] }): Promise<EventRow[]> {
    return await events.listEvents(await this.options.dbs.project(ref), f);
  }

  /** Ingests an event: its rules are evaluated and matching ones send. */
  async ingestEvent(ref: string, input: { type: string; data: unknown }): Promise<EventRow> {
    return await events.ingestEvent(this.options.dbs, this, ref, input);
  }

  /** Applies a Twilio status callback to the project's SMS notification (its signature checked first). */
  async smsStatus(
    ref: string,
    signature: string | undefined,
    params: URLSearchParams,
  ): Promise<ReceiptResult> {
    const db = await this.options.dbs.project(ref);
    return await smsStatusCallback(db, (await this.settings(ref, db)).sms, signature, params);
  }

  /** Closes pooled provider connections. */
  async close(): Promise<void> {
    await this.providers.close();
  }
}
