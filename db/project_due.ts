import type { Queryable } from "./driver.ts";

/**
 * When work stored in a project database next falls due (epoch milliseconds; null: none is), read before the
 * database rests: a cron tick, a pending job or its retry, a running job's lease, a queued notification or its
 * retry. A sending notification or an enabled alert (evaluated every period) makes it due now, so that the
 * periodic checks that look for such work keep opening it.
 */
export async function projectDueAt(db: Queryable): Promise<number | null> {
  const [row] = await db.query<{ due: string | null }>(PROJECT_DUE_SQL);
  return row?.due == null ? null : Number(row.due);
}

/** The query of {@linkcode projectDueAt} (a rest file written by another query is not trusted: db/pglite.ts). */
export const PROJECT_DUE_SQL = `select (extract(epoch from least(
       (select min(next_run) from platform.cron_entries where is_active),
       (select min(scheduled_at) from platform.jobs where status in ('pending', 'failed')),
       (select min(lease_until) from platform.jobs where status = 'running'),
       (select min(scheduled_at) from notifications.messages where status = 'queued' and dispatch_id is not null),
       (select min(next_attempt_at) from notifications.messages where status = 'failed' and dispatch_id is not null),
       (select now() from notifications.messages where status = 'sending' limit 1),
       (select now() from platform.alerts where enabled limit 1)
     )) * 1000)::text as due`;
