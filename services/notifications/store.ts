import type { Queryable } from "../../db/driver.ts";
import type { Channel, ProviderResult } from "./providers/provider.ts";

/** Notification statuses. */
export const STATUSES = [
  "queued",
  "sending",
  "sent",
  "delivered",
  "failed",
  "dead_lettered",
  "suppressed",
] as const;

/** A notification status. */
export type Status = typeof STATUSES[number];

/** The columns of a notification as the API shows it (`dispatch_id` stays internal). */
export const NOTIFICATION_COLUMNS =
  `id, channel, recipient, subject, body, event, payload, template_id, variables,
  metadata, idempotency_key, rule_id, event_id, status, attempts, max_attempts, last_error, provider,
  provider_message_id, scheduled_at, next_attempt_at, queued_at, sending_at, sent_at, delivered_at, failed_at,
  dead_lettered_at, suppressed_at, created_at, updated_at`;

/** A notification row. */
export interface NotificationRow {
  id: string;
  channel: Channel;
  recipient: string;
  subject: string | null;
  body: string | null;
  event: string | null;
  payload: unknown;
  template_id: string | null;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
  idempotency_key: string | null;
  rule_id: string | null;
  event_id: string | null;
  status: Status;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  provider: string | null;
  provider_message_id: string | null;
  scheduled_at: Date;
  next_attempt_at: Date | null;
  queued_at: Date;
  sending_at: Date | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  failed_at: Date | null;
  dead_lettered_at: Date | null;
  suppressed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A notification ready to be stored. */
export interface NewNotification {
  channel: Channel;
  recipient: string;
  subject: string | null;
  body: string | null;
  event: string | null;
  payload: unknown;
  templateId: string | null;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
  idempotencyKey: string | null;
  ruleId: string | null;
  eventId: string | null;
  maxAttempts: number;
  delaySecs: number;
  /** Set when a quota or setting blocks the send: stored as `suppressed` with this reason. */
  suppressedReason: string | null;
  /** The token of the queue message that will move it (null when suppressed). */
  dispatchId: string | null;
}

/** Inserts a notification; returns null when its idempotency key is already taken (within 24 h). */
export async function insertNotification(db: Queryable, n: NewNotification): Promise<NotificationRow | null> {
  if (n.idempotencyKey) {
    // A key older than 24 h is released so that it can be used again.
    await db.query(
      `update notifications.messages set idempotency_key = null
        where idempotency_key = $1 and created_at < now() - interval '24 hours'`,
      [n.idempotencyKey],
    );
  }
  const suppressed = n.suppressedReason !== null;
  const [row] = await db.query<NotificationRow>(
    `insert into notifications.messages (channel, recipient, subject, body, event, payload, template_id, variables,
       metadata, idempotency_key, rule_id, event_id, status, max_attempts, dispatch_id, scheduled_at, suppressed_at,
       last_error)
     values ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8::text::jsonb, $9::text::jsonb, $10, $11, $12, $13, $14, $15,
       now() + make_interval(secs => $16), case when $13 = 'suppressed' then now() end, $17)
     on conflict (idempotency_key) where idempotency_key is not null do nothing
     returning ${NOTIFICATION_COLUMNS}`,
    [
      n.channel,
      n.recipient,
      n.subject,
      n.body,
      n.event,
      n.payload === undefined || n.payload === null ? null : JSON.stringify(n.payload),
      n.templateId,
      JSON.stringify(n.variables),
      JSON.stringify(n.metadata),
      n.idempotencyKey,
      n.ruleId,
      n.eventId,
      suppressed ? "suppressed" : "queued",
      n.maxAttempts,
      n.dispatchId,
      n.delaySecs,
      n.suppressedReason,
    ],
  );
  return row ?? null;
}

/** The live notification holding an idempotency key. */
export async function findByIdempotencyKey(db: Queryable, key: string): Promise<NotificationRow | null> {
  const [row] = await db.query<NotificationRow>(
    `select ${NOTIFICATION_COLUMNS} from notifications.messages
      where idempotency_key = $1 and created_at >= now() - interval '24 hours'`,
    [key],
  );
  return row ?? null;
}

/** Today's sends of a channel that count against its quota (suppressed ones do not). */
export async function countToday(db: Queryable, channel: Channel): Promise<number> {
  const [row] = await db.query<{ n: string }>(
    `select count(*) as n from notifications.messages
      where channel = $1 and created_at >= date_trunc('day', now()) and status <> 'suppressed'`,
    [channel],
  );
  return Number(row?.n ?? 0);
}

/** A notification by id. */
export async function getNotification(db: Queryable, id: string): Promise<NotificationRow | null> {
  const [row] = await db.query<NotificationRow>(
    `select ${NOTIFICATION_COLUMNS} from notifications.messages where id = $1`,
    [id],
  );
  return row ?? null;
}

/**
 * Moves a notification to `sending` if `dispatch` is still its current token and it is waiting, with a lease of
 * `leaseSecs` held in `next_attempt_at` (when another attempt may start if this one is lost). Returns null when
 * another delivery owns it or it is already done.
 */
export async function claim(
  db: Queryable,
  id: string,
  dispatch: string,
  leaseSecs: number,
): Promise<NotificationRow | null> {
  const [row] = await db.query<NotificationRow>(
    `update notifications.messages
        set status = 'sending', sending_at = now(), attempts = attempts + 1,
            next_attempt_at = now() + make_interval(secs => $3), updated_at = now()
      where id = $1 and dispatch_id = $2 and status in ('queued', 'failed')
      returning ${NOTIFICATION_COLUMNS}`,
    [id, dispatch, leaseSecs],
  );
  return row ?? null;
}

/** An attempt in flight: the notification and its attempt number. */
export interface HeldAttempt {
  id: string;
  attempt: number;
}

/** Extends the leases of attempts still in flight here. */
export async function renewLeases(db: Queryable, held: HeldAttempt[], leaseSecs: number): Promise<void> {
  if (held.length === 0) return;
  await db.query(
    `update notifications.messages m set next_attempt_at = now() + make_interval(secs => $3)
       from unnest($1::uuid[], $2::int[]) as h(id, attempt)
      where m.id = h.id and m.attempts = h.attempt and m.status = 'sending'`,
    [held.map((h) => h.id), held.map((h) => h.attempt), leaseSecs],
  );
}

/**
 * Ends attempts whose lease expired (the process sending them stopped): each is recorded as a failed attempt
 * with that reason, and the notification becomes `failed` with a new token, due now (or `dead_lettered` when
 * it had no attempt left). A row from before leases has none: its lease is counted from `sending_at`.
 * Returns the notifications to put back on the queue.
 */
export async function expireLeases(
  db: Queryable,
  leaseSecs: number,
  limit: number,
): Promise<{ id: string; channel: Channel; dispatch_id: string }[]> {
  return await db.query(
    `with expired as (
       update notifications.messages m
          set status = case when m.attempts >= m.max_attempts then 'dead_lettered' else 'failed' end,
              last_error = 'Attempt ' || m.attempts ||
                ' did not finish: the process sending it stopped (lease expired); it may have been received',
              failed_at = now(),
              dead_lettered_at = case when m.attempts >= m.max_attempts then now() end,
              next_attempt_at = case when m.attempts < m.max_attempts then now() end,
              dispatch_id = case when m.attempts < m.max_attempts then gen_random_uuid() end,
              updated_at = now()
        where m.id in (
          select id from notifications.messages
           where status = 'sending'
             and coalesce(next_attempt_at, sending_at + make_interval(secs => $1)) < now()
           limit $2)
          -- Again on the row as locked: a renewal or another sweep may have come first.
          and m.status = 'sending'
          and coalesce(m.next_attempt_at, m.sending_at + make_interval(secs => $1)) < now()
       returning m.id, m.channel, m.attempts, m.provider, m.status, m.dispatch_id, m.last_error, m.sending_at
     ), attempt as (
       insert into notifications.attempts (notification_id, attempt, channel, provider, outcome, response, error,
         duration_ms, started_at)
       select id, attempts, channel, coalesce(provider, channel), 'retryable_error', '', last_error,
              (extract(epoch from now() - sending_at) * 1000)::int, sending_at
         from expired
     )
     select id, channel, dispatch_id from expired where status = 'failed'`,
    [leaseSecs, limit],
  );
}

/** What follows an attempt. */
export type Next =
  | { status: "sent" }
  | { status: "delivered" }
  | { status: "failed"; retryInMs: number; dispatchId: string }
  | { status: "dead_lettered" };

/**
 * Records one attempt and its provider log and moves the notification to its next status, in one statement.
 * Returns false when the notification was no longer ours, its lease having expired (nothing is written then).
 */
export async function finishAttempt(
  db: Queryable,
  options: {
    row: NotificationRow;
    dispatch: string;
    result: ProviderResult;
    next: Next;
    startedAt: Date;
    durationMs: number;
  },
): Promise<boolean> {
  const { row, result, next } = options;
  const rows = await db.query<{ id: string }>(
    `with target as (
       select id from notifications.messages
        where id = $1 and dispatch_id = $2 and attempts = $3 and status = 'sending' for update
     ), attempt as (
       insert into notifications.attempts (notification_id, attempt, channel, provider, outcome, http_status,
         response, error, retry_after_ms, duration_ms, started_at)
       select id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 from target
     ), log as (
       insert into notifications.provider_logs (notification_id, channel, provider, status, request, http_status,
         response, duration_ms)
       select id, $4, $5, case when $6 = 'success' then 'success' else 'error' end, $13::text::jsonb, $7, $8, $11
         from target
     )
     update notifications.messages m
        set status = $14,
            provider = $5,
            provider_message_id = coalesce($15, m.provider_message_id),
            last_error = $9,
            sent_at = case when $14 in ('sent', 'delivered') then now() else m.sent_at end,
            delivered_at = case when $14 = 'delivered' then now() else m.delivered_at end,
            failed_at = case when $14 in ('failed', 'dead_lettered') then now() else m.failed_at end,
            dead_lettered_at = case when $14 = 'dead_lettered' then now() else m.dead_lettered_at end,
            next_attempt_at = case when $14 = 'failed' then now() + make_interval(secs => $16) end,
            dispatch_id = $17,
            updated_at = now()
       from target where m.id = target.id
     returning m.id`,
    [
      row.id,
      options.dispatch,
      row.attempts,
      row.channel,
      result.provider,
      result.outcome,
      result.httpStatus ?? null,
      result.response,
      result.error ?? null,
      result.retryAfterMs ?? null,
      Math.round(options.durationMs),
      options.startedAt,
      JSON.stringify(result.request),
      next.status,
      result.providerMessageId ?? null,
      next.status === "failed" ? next.retryInMs / 1000 : 0,
      next.status === "failed" ? next.dispatchId : null,
    ],
  );
  return rows.length > 0;
}

/**
 * Puts a failed or dead-lettered notification back to `queued` with a fresh token and a fresh budget of
 * `attempts` more tries; attempt numbers keep counting so the attempt history stays in order.
 */
export async function requeue(
  db: Queryable,
  id: string,
  options: { from: Status[]; dispatchId: string; attempts: number },
): Promise<NotificationRow | null> {
  const [row] = await db.query<NotificationRow>(
    `update notifications.messages
        set status = 'queued', queued_at = now(), max_attempts = attempts + $4, next_attempt_at = null,
            dispatch_id = $3, dead_lettered_at = null, scheduled_at = now(), updated_at = now()
      where id = $1 and status = any($2::text[])
      returning ${NOTIFICATION_COLUMNS}`,
    [id, options.from, options.dispatchId, options.attempts],
  );
  return row ?? null;
}

/**
 * Notifications waiting for a queue message that is overdue by `graceSecs` (a lost enqueue, a crash before a
 * send started); a send in flight at a crash is found by {@linkcode expireLeases}.
 */
export async function overdue(
  db: Queryable,
  graceSecs: number,
  limit: number,
): Promise<{ id: string; channel: Channel; dispatch_id: string }[]> {
  return await db.query(
    `select id, channel, dispatch_id from notifications.messages
      where dispatch_id is not null and (
        (status = 'queued' and scheduled_at < now() - make_interval(secs => $1))
        or (status = 'failed' and next_attempt_at < now() - make_interval(secs => $1)))
      order by updated_at limit $2`,
    [graceSecs, limit],
  );
}
