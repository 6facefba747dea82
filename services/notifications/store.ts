import type { Db, Queryable } from "../../db/driver.ts";
import { sqlState } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
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

/** The columns an attempt needs of the notification it claims (what is sent, and the attempt's numbers). */
const CLAIM_COLUMNS =
  "id, channel, recipient, subject, body, event, payload, metadata, attempts, max_attempts";

/** A notification as claimed for an attempt: only what sending and recording the attempt read. */
export type ClaimedRow = Pick<
  NotificationRow,
  | "id"
  | "channel"
  | "recipient"
  | "subject"
  | "body"
  | "event"
  | "payload"
  | "metadata"
  | "attempts"
  | "max_attempts"
>;

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

/**
 * Inserts several queued notifications without idempotency keys in one statement (one round trip and one
 * commit for a batch of sends); rows in the order given.
 */
export async function insertNotifications(
  db: Queryable,
  list: NewNotification[],
): Promise<NotificationRow[]> {
  const ids = list.map(() => crypto.randomUUID());
  const col = <T>(pick: (n: NewNotification) => T) => list.map(pick);
  const rows = await db.query<NotificationRow>(
    `insert into notifications.messages (id, channel, recipient, subject, body, event, payload, template_id,
       variables, metadata, rule_id, event_id, status, max_attempts, dispatch_id, scheduled_at)
     select n.id, n.channel, n.recipient, n.subject, n.body, n.event, n.payload::jsonb, n.template_id,
            n.variables::jsonb, n.metadata::jsonb, n.rule_id, n.event_id, 'queued', n.max_attempts, n.dispatch_id,
            now() + make_interval(secs => n.delay_secs)
       from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
         $8::uuid[], $9::text[], $10::text[], $11::uuid[], $12::uuid[], $13::int[], $14::uuid[], $15::float8[])
         as n(id, channel, recipient, subject, body, event, payload, template_id, variables, metadata, rule_id,
           event_id, max_attempts, dispatch_id, delay_secs)
     returning ${NOTIFICATION_COLUMNS}`,
    [
      ids,
      col((n) => n.channel),
      col((n) => n.recipient),
      col((n) => n.subject),
      col((n) => n.body),
      col((n) => n.event),
      col((n) => n.payload === undefined || n.payload === null ? null : JSON.stringify(n.payload)),
      col((n) => n.templateId),
      col((n) => JSON.stringify(n.variables)),
      col((n) => JSON.stringify(n.metadata)),
      col((n) => n.ruleId),
      col((n) => n.eventId),
      col((n) => n.maxAttempts),
      col((n) => n.dispatchId),
      col((n) => n.delaySecs),
    ],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
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
): Promise<ClaimedRow | null> {
  const [row] = await db.query<ClaimedRow>(
    `update notifications.messages
        set status = 'sending', sending_at = now(), attempts = attempts + 1,
            next_attempt_at = now() + make_interval(secs => $3), updated_at = now()
      where id = $1 and dispatch_id = $2 and status in ('queued', 'failed')
      returning ${CLAIM_COLUMNS}`,
    [id, dispatch, leaseSecs],
  );
  return row ?? null;
}

/**
 * Claims several notifications in one statement, as {@linkcode claim} does each (results in order); one asked
 * twice in a batch is claimed once.
 */
export async function claimMany(
  db: Queryable,
  claims: { id: string; dispatch: string }[],
  leaseSecs: number,
): Promise<(ClaimedRow | null)[]> {
  const rows = await db.query<ClaimedRow & { claim_dispatch: string }>(
    `update notifications.messages
        set status = 'sending', sending_at = now(), attempts = attempts + 1,
            next_attempt_at = now() + make_interval(secs => $3), updated_at = now()
       from unnest($1::uuid[], $2::uuid[]) as c(claim_id, claim_dispatch)
      where id = c.claim_id and dispatch_id = c.claim_dispatch and status in ('queued', 'failed')
      returning ${CLAIM_COLUMNS}, c.claim_dispatch`,
    [claims.map((c) => c.id), claims.map((c) => c.dispatch), leaseSecs],
  );
  const claimed = new Map(rows.map(({ claim_dispatch, ...row }) => [`${row.id}/${claim_dispatch}`, row]));
  return claims.map((c) => {
    const key = `${c.id}/${c.dispatch}`;
    const row = claimed.get(key) ?? null;
    claimed.delete(key); // its first claim takes it
    return row;
  });
}

/**
 * Claims up to `limit` notifications that are due (queued and scheduled, or failed and their retry due) straight
 * from the table, as {@linkcode claim} does each, oldest due first; each keeps its current `dispatch_id` as the
 * token of the attempt. Rows another session holds locked are skipped, not waited for: several instances pull
 * from one table side by side and none takes a notification twice.
 */
export async function claimDue(
  db: Queryable,
  limit: number,
  leaseSecs: number,
): Promise<(ClaimedRow & { dispatch_id: string })[]> {
  return await db.query<ClaimedRow & { dispatch_id: string }>(
    `update notifications.messages m
        set status = 'sending', sending_at = now(), attempts = attempts + 1,
            next_attempt_at = now() + make_interval(secs => $2), updated_at = now()
       from (select id as due_id from notifications.messages
              where dispatch_id is not null and status in ('queued', 'failed')
                and (case when status = 'queued' then scheduled_at else next_attempt_at end) <= now()
              order by (case when status = 'queued' then scheduled_at else next_attempt_at end)
              limit $1 for update skip locked) due
      where m.id = due.due_id
      returning ${CLAIM_COLUMNS}, dispatch_id::text as dispatch_id`,
    [limit, leaseSecs],
  );
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
    row: Pick<NotificationRow, "id" | "attempts" | "channel">;
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

/** What {@linkcode finishAttempt} records of one attempt. */
export type AttemptRecord = Parameters<typeof finishAttempt>[1];

/**
 * Records several attempts in one statement, as {@linkcode finishAttempt} does each: one round trip and one
 * commit for a batch. Results in order; false for one whose lease was lost (nothing written for it).
 */
export async function finishAttempts(db: Queryable, records: AttemptRecord[]): Promise<boolean[]> {
  const col = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
  const rows = await db.query<{ f_dispatch: string }>(
    `with f as (
       select * from unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[], $7::int[],
         $8::text[], $9::text[], $10::int[], $11::int[], $12::text[], $13::text[], $14::text[], $15::text[],
         $16::float8[], $17::uuid[])
         as f(f_id, f_dispatch, f_attempt, f_channel, f_provider, f_outcome, f_http_status, f_response, f_error,
           f_retry_after_ms, f_duration_ms, f_started_at, f_request, f_status, f_provider_message_id,
           f_retry_secs, f_next_dispatch)
     ), done as (
       -- The row is locked by its update, and the conditions checked again if another session moved it first.
       update notifications.messages m
          set status = f.f_status,
              provider = f.f_provider,
              provider_message_id = coalesce(f.f_provider_message_id, m.provider_message_id),
              last_error = f.f_error,
              sent_at = case when f.f_status in ('sent', 'delivered') then now() else m.sent_at end,
              delivered_at = case when f.f_status = 'delivered' then now() else m.delivered_at end,
              failed_at = case when f.f_status in ('failed', 'dead_lettered') then now() else m.failed_at end,
              dead_lettered_at = case when f.f_status = 'dead_lettered' then now() else m.dead_lettered_at end,
              next_attempt_at = case when f.f_status = 'failed' then now() + make_interval(secs => f.f_retry_secs) end,
              dispatch_id = f.f_next_dispatch,
              updated_at = now()
         from f
        where m.id = f.f_id and m.dispatch_id = f.f_dispatch and m.attempts = f.f_attempt and m.status = 'sending'
       returning f.*
     ), attempt as (
       insert into notifications.attempts (notification_id, attempt, channel, provider, outcome, http_status,
         response, error, retry_after_ms, duration_ms, started_at)
       select f_id, f_attempt, f_channel, f_provider, f_outcome, f_http_status, f_response, f_error,
              f_retry_after_ms, f_duration_ms, f_started_at::timestamptz
         from done
     ), log as (
       insert into notifications.provider_logs (notification_id, channel, provider, status, request, http_status,
         response, duration_ms)
       select f_id, f_channel, f_provider, case when f_outcome = 'success' then 'success' else 'error' end,
              f_request::jsonb, f_http_status, f_response, f_duration_ms
         from done
     )
     select f_dispatch from done`,
    [
      col((r) => r.row.id),
      col((r) => r.dispatch),
      col((r) => r.row.attempts),
      col((r) => r.row.channel),
      col((r) => r.result.provider),
      col((r) => r.result.outcome),
      col((r) => r.result.httpStatus ?? null),
      col((r) => r.result.response),
      col((r) => r.result.error ?? null),
      col((r) => r.result.retryAfterMs === undefined ? null : Math.round(r.result.retryAfterMs)),
      col((r) => Math.round(r.durationMs)),
      col((r) => r.startedAt.toISOString()),
      col((r) => JSON.stringify(r.result.request)),
      col((r) => r.next.status),
      col((r) => r.result.providerMessageId ?? null),
      col((r) => r.next.status === "failed" ? r.next.retryInMs / 1000 : 0),
      col((r) => r.next.status === "failed" ? r.next.dispatchId : null),
    ],
  );
  const recorded = new Set(rows.map((r) => r.f_dispatch));
  return records.map((r) => recorded.has(r.dispatch));
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

/**
 * Inserts a notification while a daily quota applies: one sender at a time per channel (an advisory lock for
 * the transaction), so the count cannot be overtaken; `make` builds the row from the reason it is suppressed
 * (null while under the quota).
 */
export async function insertUnderQuota(
  db: Db,
  channel: Channel,
  quota: number,
  make: (suppressedReason: string | null) => NewNotification,
): Promise<NotificationRow | null> {
  return await db.transaction(async (tx) => {
    await tx.query("select pg_advisory_xact_lock(hashtext($1))", [`notifications.quota.${channel}`]);
    const used = await countToday(tx, channel);
    return await insertNotification(
      tx,
      make(used >= quota ? `Daily quota of ${quota} ${channel} notifications reached` : null),
    );
  });
}

// Lists

/** Paging of every list: limit 1–500 (default 50) and offset. */
export interface Page {
  limit: number;
  offset: number;
}

function like(search: string): string {
  return `%${search.replace(/[\\%_]/g, (c) => "\\" + c)}%`;
}

/** Filters of the notification list. */
export interface ListFilter extends Page {
  channel?: Channel;
  status?: Status;
  search?: string;
  sort: "created_at" | "updated_at" | "status";
  order: "asc" | "desc";
}

/** Lists notifications with filters, a case-insensitive search (recipient, subject, body, event, id) and sort. */
export async function listNotifications(db: Queryable, f: ListFilter): Promise<NotificationRow[]> {
  // The sort column and order come from closed enums; every value is a parameter.
  const sort = { created_at: "created_at", updated_at: "updated_at", status: "status" }[f.sort];
  const order = f.order === "asc" ? "asc" : "desc";
  return await db.query<NotificationRow>(
    `select ${NOTIFICATION_COLUMNS} from notifications.messages
      where ($1::text is null or channel = $1)
        and ($2::text is null or status = $2)
        and ($3::text is null or recipient ilike $3 or subject ilike $3 or body ilike $3 or event ilike $3
             or id::text = $4)
      order by ${sort} ${order}, id ${order}
      limit $5 offset $6`,
    [
      f.channel ?? null,
      f.status ?? null,
      f.search ? like(f.search) : null,
      f.search ?? null,
      f.limit,
      f.offset,
    ],
  );
}

/** Dead letters: notifications in `dead_lettered`, newest first. */
export async function listDeadLetters(
  db: Queryable,
  f: Page & { channel?: Channel; search?: string },
): Promise<NotificationRow[]> {
  return await db.query<NotificationRow>(
    `select ${NOTIFICATION_COLUMNS} from notifications.messages
      where status = 'dead_lettered' and ($1::text is null or channel = $1)
        and ($2::text is null or recipient ilike $2 or subject ilike $2 or body ilike $2 or last_error ilike $2)
      order by dead_lettered_at desc, id limit $3 offset $4`,
    [f.channel ?? null, f.search ? like(f.search) : null, f.limit, f.offset],
  );
}

/** The attempts of a notification, in order, with the provider's answers. */
export async function listAttempts(db: Queryable, id: string): Promise<Record<string, unknown>[]> {
  return await db.query(
    `select id::text as id, notification_id, attempt, kind, channel, provider, outcome, http_status, response, error,
            retry_after_ms, duration_ms, started_at, finished_at
       from notifications.attempts where notification_id = $1 order by attempt, id`,
    [id],
  );
}

/** Provider logs, newest first. */
export async function listProviderLogs(
  db: Queryable,
  f: Page & { channel?: Channel; status?: "success" | "error" },
): Promise<Record<string, unknown>[]> {
  return await db.query(
    `select id::text as id, notification_id, kind, channel, provider, status, request, http_status, response,
            duration_ms, created_at
       from notifications.provider_logs
      where ($1::text is null or channel = $1) and ($2::text is null or status = $2)
      order by id desc limit $3 offset $4`,
    [f.channel ?? null, f.status ?? null, f.limit, f.offset],
  );
}

/** The raw figures of the stats over an interval (a PostgreSQL interval text), optionally of one channel. */
export async function statsRows(db: Queryable, interval: string, channel?: Channel) {
  const counts = await db.query<{ channel: Channel; status: Status; n: string }>(
    `select channel, status, count(*) as n from notifications.messages
      where created_at >= now() - $1::interval and ($2::text is null or channel = $2)
      group by channel, status`,
    [interval, channel ?? null],
  );
  const [latency] = await db.query<{ p50: number | null; p95: number | null; avg: number | null }>(
    `select percentile_cont(0.5) within group (order by ms) as p50,
            percentile_cont(0.95) within group (order by ms) as p95, avg(ms)::float8 as avg
       from (select extract(epoch from (sent_at - queued_at)) * 1000 as ms from notifications.messages
              where sent_at is not null and created_at >= now() - $1::interval
                and ($2::text is null or channel = $2)) s`,
    [interval, channel ?? null],
  );
  const [attempts] = await db.query<{ total: string; ok: string }>(
    `select count(*) as total, count(*) filter (where outcome = 'success') as ok from notifications.attempts
      where kind = 'send' and finished_at >= now() - $1::interval and ($2::text is null or channel = $2)`,
    [interval, channel ?? null],
  );
  return { counts, latency, attempts };
}

/** The raw figures of the queue depth: unfinished notifications by channel and status, and the oldest. */
export async function queueRows(db: Queryable) {
  const rows = await db.query<{ channel: Channel; status: Status; n: string; scheduled: string }>(
    `select channel, status, count(*) as n,
            count(*) filter (where status <> 'sending' and (scheduled_at > now() or next_attempt_at > now()))
              as scheduled
       from notifications.messages where status in ('queued', 'sending', 'failed')
      group by channel, status`,
  );
  const [oldest] = await db.query<{ at: Date | null }>(
    `select min(queued_at) as at from notifications.messages where status in ('queued', 'failed')`,
  );
  return { rows, oldest };
}

// Delivery receipts

/** What a provider's status report means for the notification. */
export type ReceiptOutcome = "delivered" | "failed" | "progress";

/** A delivery receipt: a provider's report on a message it accepted earlier. */
export interface Receipt {
  provider: string;
  channel: Channel;
  /** The provider's message id, recorded when the message was sent. */
  messageId: string;
  /** The provider's own status word (kept in the provider log). */
  status: string;
  outcome: ReceiptOutcome;
  /** Why it failed, for `failed`. */
  error: string | null;
  /** What the provider said, without personal data (kept in the provider log). */
  details: Record<string, unknown>;
}

/** How a receipt was applied. */
export interface ReceiptResult {
  notification_id: string;
  /** The notification's status after the receipt. */
  status: Status;
  /** False for a repeated receipt (same message, same status): nothing was written. */
  recorded: boolean;
  /** Whether the notification moved (sent → delivered, or sent → dead_lettered). */
  changed: boolean;
}

/**
 * Applies a receipt in one statement: the notification is found by the provider's message id and locked, the
 * receipt is logged once (a unique index drops a repeat), and only a `sent` notification moves: to `delivered`
 * with its timestamp, or for a failure to `dead_lettered` with an attempt that records the provider's reason.
 * A notification is never moved backwards, and a final state stays final. Null when the id is unknown.
 */
export async function applyReceipt(db: Queryable, r: Receipt): Promise<ReceiptResult | null> {
  const [row] = await db.query<ReceiptResult>(
    `with target as (
       select id, status from notifications.messages
        where provider = $1 and provider_message_id = $2 and channel = $3
        order by created_at desc limit 1 for update
     ), log as (
       insert into notifications.provider_logs (notification_id, channel, provider, status, request, response,
         duration_ms, kind)
       select id, $3, $1, case when $4 = 'failed' then 'error' else 'success' end, $5::text::jsonb, $6, 0, 'receipt'
         from target
       on conflict (notification_id, provider, (request ->> 'sid'), (request ->> 'status')) where kind = 'receipt'
       do nothing
       returning notification_id
     ), moved as (
       update notifications.messages m
          set status = case when $4 = 'delivered' then 'delivered' else 'dead_lettered' end,
              delivered_at = case when $4 = 'delivered' then now() else m.delivered_at end,
              failed_at = case when $4 = 'failed' then now() else m.failed_at end,
              dead_lettered_at = case when $4 = 'failed' then now() else m.dead_lettered_at end,
              last_error = case when $4 = 'failed' then $7 else m.last_error end,
              updated_at = now()
         from log
        where m.id = log.notification_id and m.status = 'sent' and $4 in ('delivered', 'failed')
       returning m.id, m.status, m.attempts
     ), attempt as (
       insert into notifications.attempts (notification_id, attempt, channel, provider, outcome, response, error,
         duration_ms, started_at, kind)
       select id, attempts, $3, $1, 'permanent_error', $6, $7, 0, now(), 'receipt' from moved where $4 = 'failed'
     )
     select t.id as notification_id, coalesce(mv.status, t.status) as status,
            exists (select 1 from log) as recorded, mv.id is not null as changed
       from target t left join moved mv on mv.id = t.id`,
    [
      r.provider,
      r.messageId,
      r.channel,
      r.outcome,
      JSON.stringify({ sid: r.messageId, status: r.status, ...r.details }),
      `${r.provider} reported ${r.status}`,
      r.error,
    ],
  );
  return row ?? null;
}

// Templates

/** A notification template (docs/notifications.md). */
export interface Template {
  id: string;
  name: string;
  channel: Channel;
  subject: string | null;
  body: string;
  created_at: Date;
  updated_at: Date;
}

const TEMPLATE_COLUMNS = "id, name, channel, subject, body, created_at, updated_at";

function conflictOnName(err: unknown, name: string): never {
  if (sqlState(err) === "23505") throw errors.conflict(`A template named "${name}" already exists`);
  throw err;
}

/** Lists templates by name. */
export async function listTemplates(db: Queryable): Promise<Template[]> {
  return await db.query<Template>(`select ${TEMPLATE_COLUMNS} from notifications.templates order by name`);
}

/** A template by id, or null. */
export async function findTemplate(db: Queryable, id: string): Promise<Template | null> {
  const [row] = await db.query<Template>(
    `select ${TEMPLATE_COLUMNS} from notifications.templates where id = $1`,
    [
      id,
    ],
  );
  return row ?? null;
}

/** Inserts a template (409 when the name is taken). */
export async function insertTemplate(
  db: Queryable,
  input: { name: string; channel: Channel; subject?: string | null; body: string },
): Promise<Template> {
  try {
    const [row] = await db.query<Template>(
      `insert into notifications.templates (name, channel, subject, body) values ($1, $2, $3, $4)
       returning ${TEMPLATE_COLUMNS}`,
      [input.name, input.channel, input.subject ?? null, input.body],
    );
    return row!;
  } catch (err) {
    conflictOnName(err, input.name);
  }
}

/** Updates name, subject and body (only those given); null when there is no such template. */
export async function updateTemplateRow(
  db: Queryable,
  id: string,
  input: { name?: string; subject?: string | null; body?: string },
): Promise<Template | null> {
  try {
    const [row] = await db.query<Template>(
      `update notifications.templates
          set name = coalesce($2, name),
              subject = case when $3::boolean then $4 else subject end,
              body = coalesce($5, body),
              updated_at = now()
        where id = $1 returning ${TEMPLATE_COLUMNS}`,
      [id, input.name ?? null, input.subject !== undefined, input.subject ?? null, input.body ?? null],
    );
    return row ?? null;
  } catch (err) {
    conflictOnName(err, input.name ?? "");
  }
}

/** Deletes a template; false when there was none. */
export async function deleteTemplateRow(db: Queryable, id: string): Promise<boolean> {
  return (await db.query(`delete from notifications.templates where id = $1 returning id`, [id])).length > 0;
}

// Rules

/** A notification rule (docs/notifications.md). */
export interface Rule {
  id: string;
  name: string;
  trigger_type: string;
  condition: string;
  channel: Channel;
  recipient_expr: string;
  template_id: string | null;
  subject: string | null;
  body: string | null;
  delay_secs: number;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The fields of a rule a client sets. */
export type RuleInput = Omit<Rule, "id" | "created_at" | "updated_at">;

const RULE_COLUMNS =
  `id, name, trigger_type, condition, channel, recipient_expr, template_id, subject, body, delay_secs,
  enabled, created_at, updated_at`;

/** The channel of a template, or null when there is none of that id (a rule's check). */
export async function templateChannel(db: Queryable, id: string): Promise<string | null> {
  const [t] = await db.query<{ channel: string }>(
    "select channel from notifications.templates where id = $1",
    [id],
  );
  return t?.channel ?? null;
}

/** Lists rules, newest first. */
export async function listRules(db: Queryable): Promise<Rule[]> {
  return await db.query<Rule>(`select ${RULE_COLUMNS} from notifications.rules order by created_at desc, id`);
}

/** A rule by id, or null. */
export async function findRule(db: Queryable, id: string): Promise<Rule | null> {
  const [row] = await db.query<Rule>(`select ${RULE_COLUMNS} from notifications.rules where id = $1`, [id]);
  return row ?? null;
}

/** The enabled rules of an event type. */
export async function rulesFor(db: Queryable, type: string): Promise<Rule[]> {
  return await db.query<Rule>(
    `select ${RULE_COLUMNS} from notifications.rules where trigger_type = $1 and enabled order by created_at, id`,
    [type],
  );
}

const ruleParams = (r: RuleInput) => [
  r.name,
  r.trigger_type,
  r.condition,
  r.channel,
  r.recipient_expr,
  r.template_id,
  r.subject,
  r.body,
  r.delay_secs,
  r.enabled,
];

/** Inserts a rule (checked by the caller). */
export async function insertRule(db: Queryable, input: RuleInput): Promise<Rule> {
  const [row] = await db.query<Rule>(
    `insert into notifications.rules (name, trigger_type, condition, channel, recipient_expr, template_id, subject,
       body, delay_secs, enabled)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning ${RULE_COLUMNS}`,
    ruleParams(input),
  );
  return row!;
}

/** Writes every field of a rule; null when there is no such rule. */
export async function updateRuleRow(db: Queryable, id: string, next: RuleInput): Promise<Rule | null> {
  const [row] = await db.query<Rule>(
    `update notifications.rules
        set name = $2, trigger_type = $3, condition = $4, channel = $5, recipient_expr = $6, template_id = $7,
            subject = $8, body = $9, delay_secs = $10, enabled = $11, updated_at = now()
      where id = $1 returning ${RULE_COLUMNS}`,
    [id, ...ruleParams(next)],
  );
  return row ?? null;
}

/** Deletes a rule; false when there was none. */
export async function deleteRuleRow(db: Queryable, id: string): Promise<boolean> {
  return (await db.query(`delete from notifications.rules where id = $1 returning id`, [id])).length > 0;
}

// Rules-engine events

/** Rules-engine event statuses. */
export const EVENT_STATUSES = ["received", "matched", "ignored", "failed", "enqueued"] as const;

/** A rules-engine event. */
export interface EventRow {
  id: string;
  type: string;
  data: unknown;
  status: typeof EVENT_STATUSES[number];
  reason: string | null;
  rule_ids: string[];
  notification_ids: string[];
  received_at: Date;
  matched_at: Date | null;
  ignored_at: Date | null;
  enqueued_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const EVENT_COLUMNS =
  `id, type, data, status, reason, rule_ids, notification_ids, received_at, matched_at, ignored_at,
  enqueued_at, failed_at, created_at, updated_at`;

/** Lists events, newest first. */
export async function listEvents(
  db: Queryable,
  f: Page & { status?: typeof EVENT_STATUSES[number] },
): Promise<EventRow[]> {
  return await db.query<EventRow>(
    `select ${EVENT_COLUMNS} from notifications.events where ($1::text is null or status = $1)
      order by created_at desc, id limit $2 offset $3`,
    [f.status ?? null, f.limit, f.offset],
  );
}

/** Stores an event as `received`; returns its id. */
export async function insertEvent(db: Queryable, type: string, data: unknown): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `insert into notifications.events (type, data, status) values ($1, $2::text::jsonb, 'received') returning id`,
    [type, JSON.stringify(data)],
  );
  return row!.id;
}

/** Moves an event to `matched` with the rules that matched. */
export async function markEventMatched(db: Queryable, id: string, ruleIds: string[]): Promise<void> {
  await db.query(
    `update notifications.events set status = 'matched', matched_at = now(), rule_ids = $2::uuid[],
            updated_at = now() where id = $1`,
    [id, ruleIds],
  );
}

/** Records how an event ended (`ignored`, `enqueued` or `failed`) and the notifications it made. */
export async function finishEvent(
  db: Queryable,
  id: string,
  end: { status: string; reason: string | null; notificationIds: string[] },
): Promise<EventRow> {
  const [row] = await db.query<EventRow>(
    `update notifications.events
        set status = $2, reason = $3, notification_ids = $4::uuid[], updated_at = now(),
            ignored_at = case when $2 = 'ignored' then now() end,
            enqueued_at = case when $2 = 'enqueued' or cardinality($4::uuid[]) > 0 then now() end,
            failed_at = case when $2 = 'failed' then now() end
      where id = $1 returning ${EVENT_COLUMNS}`,
    [id, end.status, end.reason, end.notificationIds],
  );
  return row!;
}

// Settings

/** The stored settings row: public fields, sealed secrets and when they changed. */
export async function readSettingsRow(
  db: Queryable,
): Promise<{ public: Record<string, unknown>; secrets: string | null; updated_at: Date | string } | null> {
  const [row] = await db.query<
    { public: Record<string, unknown>; secrets: string | null; updated_at: Date | string }
  >(
    "select public, secrets, updated_at from notifications.settings where id",
  );
  return row ?? null;
}

/** Writes the settings row. */
export async function writeSettingsRow(db: Queryable, pub: unknown, sealed: string | null): Promise<void> {
  await db.query(
    "update notifications.settings set public = $1::text::jsonb, secrets = $2, updated_at = clock_timestamp() where id",
    [JSON.stringify(pub), sealed],
  );
}
