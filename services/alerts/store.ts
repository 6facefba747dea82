import type { Db, Queryable } from "../../db/driver.ts";

/** An alert row as stored (the claim columns stay internal). */
export interface AlertRow {
  id: string;
  name: string;
  metric: string;
  condition: string;
  threshold: number;
  channel: string;
  destination: string;
  function_name: string | null;
  window_secs: number;
  cooldown_secs: number;
  enabled: boolean;
  state: "ok" | "firing";
  last_value: number | null;
  last_evaluated_at: Date | null;
  last_triggered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** An alert event row. */
export interface AlertEventRow {
  id: string;
  alert_id: string;
  status: "triggered" | "resolved";
  value: number | null;
  threshold: number;
  notification_id: string | null;
  created_at: Date;
}

const COLUMNS = `id, name, metric, condition, threshold, channel, destination, function_name, window_secs,
  cooldown_secs, enabled, state, last_value, last_evaluated_at, last_triggered_at, created_at, updated_at`;
const EVENT_COLUMNS = "id, alert_id, status, value, threshold, notification_id, created_at";

/** The definition written by POST /v1/functions/alerts. */
export interface AlertWrite {
  name: string;
  metric: string;
  condition: string;
  threshold: number;
  channel: string;
  destination: string;
  functionName: string | null;
  windowSecs: number;
  cooldownSecs: number;
}

/** Creates an alert, or replaces the definition of the one of that name (its state and events stay). */
export async function upsertAlert(
  db: Queryable,
  w: AlertWrite,
): Promise<{ row: AlertRow; created: boolean }> {
  const [row] = await db.query<AlertRow & { created: boolean }>(
    `insert into platform.alerts
       (name, metric, condition, threshold, channel, destination, function_name, window_secs, cooldown_secs)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     on conflict (name) do update set metric = excluded.metric, condition = excluded.condition,
       threshold = excluded.threshold, channel = excluded.channel, destination = excluded.destination,
       function_name = excluded.function_name, window_secs = excluded.window_secs,
       cooldown_secs = excluded.cooldown_secs, updated_at = now()
     returning ${COLUMNS}, (xmax = 0) as created`,
    [
      w.name,
      w.metric,
      w.condition,
      w.threshold,
      w.channel,
      w.destination,
      w.functionName,
      w.windowSecs,
      w.cooldownSecs,
    ],
  );
  const { created, ...alert } = row!;
  return { row: alert, created };
}

/** Every alert, by name. */
export async function listAlerts(db: Queryable): Promise<AlertRow[]> {
  return await db.query<AlertRow>(`select ${COLUMNS} from platform.alerts order by name`);
}

/** One alert, or null. */
export async function getAlert(db: Queryable, id: string): Promise<AlertRow | null> {
  const [row] = await db.query<AlertRow>(`select ${COLUMNS} from platform.alerts where id = $1`, [id]);
  return row ?? null;
}

/** The fields PATCH may change. */
export interface AlertPatch {
  enabled?: boolean;
  threshold?: number;
  window_secs?: number;
  cooldown_secs?: number;
  destination?: string;
}

/** Changes the given fields (the others stay); null when the alert does not exist. */
export async function patchAlert(db: Queryable, id: string, p: AlertPatch): Promise<AlertRow | null> {
  const [row] = await db.query<AlertRow>(
    `update platform.alerts set enabled = coalesce($2, enabled), threshold = coalesce($3, threshold),
       window_secs = coalesce($4, window_secs), cooldown_secs = coalesce($5, cooldown_secs),
       destination = coalesce($6, destination), updated_at = now()
     where id = $1 returning ${COLUMNS}`,
    [
      id,
      p.enabled ?? null,
      p.threshold ?? null,
      p.window_secs ?? null,
      p.cooldown_secs ?? null,
      p.destination ?? null,
    ],
  );
  return row ?? null;
}

/** Deletes an alert and (by cascade) its events; false when there was none. */
export async function deleteAlert(db: Queryable, id: string): Promise<boolean> {
  return (await db.query(`delete from platform.alerts where id = $1 returning id`, [id])).length > 0;
}

/** Events newest first, of one alert or of all. */
export async function listAlertEvents(
  db: Queryable,
  options: { alertId?: string; limit: number; offset: number },
): Promise<AlertEventRow[]> {
  return await db.query<AlertEventRow>(
    `select ${EVENT_COLUMNS} from platform.alert_events where ($1::uuid is null or alert_id = $1)
     order by created_at desc, id desc limit $2 offset $3`,
    [options.alertId ?? null, options.limit, options.offset],
  );
}

/** An alert taken by a tick, with the database's clock at that moment. */
export type ClaimedAlert = AlertRow & { now: Date };

/**
 * Takes every enabled alert not yet taken by tick `tick` or a later one: the claim that makes each tick
 * evaluate an alert once however many processes tick.
 */
export async function claimAlerts(db: Queryable, tick: number): Promise<ClaimedAlert[]> {
  return await db.query<ClaimedAlert>(
    `update platform.alerts set last_tick = $1 where enabled and last_tick < $1
     returning ${COLUMNS}, now() as now`,
    [tick],
  );
}

/** Stores the values a tick read, for the alerts that tick still holds. */
export async function recordValues(
  db: Queryable,
  tick: number,
  values: { id: string; value: number | null }[],
): Promise<void> {
  if (values.length === 0) return;
  await db.query(
    `update platform.alerts a set last_value = u.v, last_evaluated_at = now()
     from unnest($2::uuid[], $3::float8[]) as u(id, v) where a.id = u.id and a.last_tick = $1`,
    [tick, values.map((v) => v.id), values.map((v) => v.value)],
  );
}

/** A change of state decided by a tick. */
export interface Transition {
  alertId: string;
  tick: number;
  to: "firing" | "ok";
  value: number | null;
  threshold: number;
}

/**
 * Moves an alert to `firing` (recording when) or back to `ok`, and records the event, in one transaction; null
 * when the alert changed meanwhile (deleted, disabled, taken by a later tick, or already moved).
 */
export async function recordTransition(db: Db, t: Transition): Promise<AlertEventRow | null> {
  return await db.transaction(async (tx) => {
    const moved = await tx.query(
      `update platform.alerts set state = $2,
         last_triggered_at = case when $2 = 'firing' then now() else last_triggered_at end
       where id = $1 and last_tick = $3 and enabled and state <> $2 returning id`,
      [t.alertId, t.to, t.tick],
    );
    if (moved.length === 0) return null;
    const [event] = await tx.query<AlertEventRow>(
      `insert into platform.alert_events (alert_id, status, value, threshold) values ($1, $2, $3, $4)
       returning ${EVENT_COLUMNS}`,
      [t.alertId, t.to === "firing" ? "triggered" : "resolved", t.value, t.threshold],
    );
    return event!;
  });
}

/** Remembers the notification an event sent. */
export async function setEventNotification(
  db: Queryable,
  eventId: string,
  notificationId: string,
): Promise<void> {
  await db.query(`update platform.alert_events set notification_id = $2 where id = $1`, [
    eventId,
    notificationId,
  ]);
}

/** An event whose notification was never queued, with its alert as it is now. */
export interface UnsentEvent {
  event: AlertEventRow;
  alert: AlertRow;
}

/**
 * Events of the last hour whose notification was never queued (the process stopped between the two writes),
 * oldest first; those younger than `graceSecs` are left to the tick that is still sending them.
 */
export async function unsentEvents(db: Queryable, graceSecs: number): Promise<UnsentEvent[]> {
  const rows = await db.query<{ event: AlertEventRow; alert: AlertRow }>(
    `select to_jsonb(e) as event, to_jsonb(a) - 'last_tick' as alert
     from platform.alert_events e join platform.alerts a on a.id = e.alert_id
     where e.notification_id is null
       and e.created_at > now() - interval '1 hour' and e.created_at < now() - make_interval(secs => $1)
     order by e.created_at limit 100`,
    [graceSecs],
  );
  return rows.map((r) => ({
    event: { ...r.event, created_at: new Date(r.event.created_at) },
    alert: r.alert,
  }));
}
