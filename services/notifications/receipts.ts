import type { Queryable } from "../../db/driver.ts";
import type { Channel } from "./providers/provider.ts";
import type { Status } from "./store.ts";

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
