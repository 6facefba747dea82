import type { Queryable } from "../../db/driver.ts";
import type { Channel } from "./providers/provider.ts";
import { NOTIFICATION_COLUMNS, type NotificationRow, type Status } from "./store.ts";

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

const CHANNELS: Channel[] = ["email", "sms", "push", "webhook"];
const ALL_STATUSES: Status[] = [
  "queued",
  "sending",
  "sent",
  "delivered",
  "failed",
  "dead_lettered",
  "suppressed",
];

function zeros<K extends string>(keys: K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

/** The stats windows. */
export const WINDOWS = { "1h": "1 hour", "24h": "24 hours", "7d": "7 days", "30d": "30 days" } as const;

/** Counts by status and channel over a window, attempts, success rate and queued-to-sent latency. */
export async function stats(db: Queryable, window: keyof typeof WINDOWS, channel?: Channel) {
  const interval = WINDOWS[window];
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
  const byStatus = zeros(ALL_STATUSES);
  const byChannel = Object.fromEntries(
    CHANNELS.map((c) => [c, { total: 0, ...zeros(ALL_STATUSES) }]),
  ) as Record<Channel, Record<Status | "total", number>>;
  let total = 0;
  for (const r of counts) {
    const n = Number(r.n);
    total += n;
    byStatus[r.status] += n;
    byChannel[r.channel][r.status] += n;
    byChannel[r.channel].total += n;
  }
  const delivered = byStatus.sent + byStatus.delivered;
  const finished = delivered + byStatus.dead_lettered;
  const round = (v: number | null | undefined) =>
    v === null || v === undefined ? null : Math.round(Number(v));
  return {
    window,
    channel: channel ?? null,
    total,
    by_status: byStatus,
    by_channel: channel ? { [channel]: byChannel[channel] } : byChannel,
    attempts: { total: Number(attempts?.total ?? 0), successful: Number(attempts?.ok ?? 0) },
    success_rate: finished > 0 ? delivered / finished : null,
    queued_to_sent_ms: { p50: round(latency?.p50), p95: round(latency?.p95), avg: round(latency?.avg) },
  };
}

/** Queue depth: notifications not yet finished, by status and channel, with the oldest waiting one. */
export async function queueDepth(db: Queryable) {
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
  const byStatus = { queued: 0, sending: 0, failed: 0 };
  const byChannel = zeros(CHANNELS);
  let depth = 0;
  let scheduled = 0;
  for (const r of rows) {
    const n = Number(r.n);
    depth += n;
    scheduled += Number(r.scheduled);
    byStatus[r.status as keyof typeof byStatus] += n;
    byChannel[r.channel] += n;
  }
  return {
    depth,
    by_status: byStatus,
    by_channel: byChannel,
    scheduled,
    ready: depth - scheduled,
    oldest_queued_at: oldest?.at ?? null,
  };
}
