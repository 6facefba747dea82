import type { Databases } from "../../db/databases.ts";
import type { Db } from "../../db/driver.ts";
import { AppError, errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import type { FunctionService } from "../functions/functions.ts";
import type { WantedWindow } from "../functions/store.ts";
import type { NotificationService } from "../notifications/service.ts";
import type { Channel } from "../notifications/providers/provider.ts";
import { alertMessage } from "./message.ts";
import { isJobMetric, type Metric, type Metrics, type MetricsReader } from "./metrics.ts";
import {
  type AlertEventRow,
  type AlertPatch,
  type AlertRow,
  claimAlerts,
  type ClaimedAlert,
  deleteAlert,
  getAlert,
  listAlertEvents,
  listAlerts,
  patchAlert,
  recordTransition,
  recordValues,
  setEventNotification,
  type Transition,
  unsentEvents,
  upsertAlert,
} from "./store.ts";
import { type AlertEventObject, type AlertObject, alertView, eventView } from "./view.ts";

/** Conditions an alert can test its metric with. */
export const CONDITIONS = ["gt", "gte", "lt", "lte", "eq"] as const;
/** A condition. */
export type Condition = typeof CONDITIONS[number];
/** Channels an alert can notify on. */
export const CHANNELS = ["email", "sms", "push", "webhook"] as const;
/** Bounds of `window_secs` (default 300). */
export const WINDOW_SECS = { min: 60, max: 86_400, default: 300 } as const;
/** Largest `cooldown_secs` (30 days; default 0). */
export const MAX_COOLDOWN_SECS = 2_592_000;

/** The body of POST /v1/functions/alerts. */
export interface AlertInput {
  name: string;
  metric: Metric;
  condition: Condition;
  threshold: number;
  channel: Channel;
  destination: string;
  function_name?: string | null;
  window_secs?: number;
  cooldown_secs?: number;
}

/** Options of {@linkcode AlertService}. */
export interface AlertServiceOptions {
  dbs: Databases;
  metrics: MetricsReader;
  notifications: NotificationService;
  functions: FunctionService;
  /** Seconds between ticks (ALERTS_EVAL_SECS). */
  evalSecs: number;
}

/** What one tick of one project did. */
export interface TickResult {
  /** Alerts this process took for the tick (others took none of them). */
  evaluated: number;
  triggered: number;
  resolved: number;
  /** Notifications of earlier events that a stopped process had left unsent, queued now. */
  recovered: number;
}

/** How old an unsent event must be before a tick sends it: younger ones are still being sent. */
const RECOVER_AFTER_SECS = 10;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` meets the condition; no value (a duration without calls) meets none. */
export function meets(value: number | null, condition: string, threshold: number): boolean {
  if (value === null) return false;
  switch (condition) {
    case "gt":
      return value > threshold;
    case "gte":
      return value >= threshold;
    case "lt":
      return value < threshold;
    case "lte":
      return value <= threshold;
    default:
      return value === threshold;
  }
}

/**
 * AlertService stores alerts and evaluates them. A tick (the number of ALERTS_EVAL_SECS periods since the epoch)
 * takes a project's enabled alerts with one conditional update, so each is evaluated once per tick however many
 * processes tick; their metrics are read together, and each change of state is recorded with its event in one
 * transaction before its one notification is sent through the notifications service.
 */
export class AlertService {
  constructor(private readonly options: AlertServiceOptions) {}

  /** The tick of a moment (default now). */
  tickAt(ms = Date.now()): number {
    return Math.floor(ms / (this.options.evalSecs * 1000));
  }

  /** Creates or updates (by name) an alert; `created` tells which. Nothing is written when the input is refused. */
  async upsert(ref: string, input: AlertInput): Promise<{ alert: AlertObject; created: boolean }> {
    this.checkThreshold(input.metric, input.threshold);
    await this.options.notifications.checkDeliverable(ref, input.channel, input.destination, {
      recipient: "destination",
      channel: "channel",
    });
    const functionName = input.function_name ? await this.functionNamed(ref, input.function_name) : null;
    const db = await this.options.dbs.project(ref);
    const { row, created } = await upsertAlert(db, {
      name: input.name,
      metric: input.metric,
      condition: input.condition,
      threshold: input.threshold,
      channel: input.channel,
      destination: input.destination,
      functionName,
      windowSecs: input.window_secs ?? WINDOW_SECS.default,
      cooldownSecs: input.cooldown_secs ?? 0,
    });
    return { alert: alertView(ref, row), created };
  }

  /** Every alert of the project, by name. */
  async list(ref: string): Promise<AlertObject[]> {
    return (await listAlerts(await this.options.dbs.project(ref))).map((row) => alertView(ref, row));
  }

  /** Changes `enabled`, `threshold`, `window_secs`, `cooldown_secs` or `destination` (404 when unknown). */
  async patch(ref: string, id: string, patch: AlertPatch): Promise<AlertObject> {
    const db = await this.options.dbs.project(ref);
    const current = await this.find(db, id);
    if (patch.threshold !== undefined) this.checkThreshold(current.metric as Metric, patch.threshold);
    if (patch.destination !== undefined) {
      await this.options.notifications.checkDeliverable(ref, current.channel as Channel, patch.destination, {
        recipient: "destination",
        channel: "channel",
      });
    }
    const row = await patchAlert(db, current.id, patch);
    if (!row) throw this.unknown(id);
    return alertView(ref, row);
  }

  /** Deletes an alert and its events (404 when unknown). */
  async delete(ref: string, id: string): Promise<void> {
    if (!UUID.test(id) || !await deleteAlert(await this.options.dbs.project(ref), id)) throw this.unknown(id);
  }

  /** Events newest first, of one alert (404 when unknown) or of every alert. */
  async events(
    ref: string,
    page: { alertId?: string; limit: number; offset: number },
  ): Promise<AlertEventObject[]> {
    const db = await this.options.dbs.project(ref);
    if (page.alertId !== undefined) await this.find(db, page.alertId);
    return (await listAlertEvents(db, page)).map(eventView);
  }

  /** Every metric over a window, project-wide or of one function (400 when it does not exist). */
  async metrics(ref: string, query: { window_secs?: number; function_name?: string }): Promise<
    Metrics & { window_secs: number; function_name: string | null }
  > {
    const functionName = query.function_name ? await this.functionNamed(ref, query.function_name) : null;
    const secs = query.window_secs ?? WINDOW_SECS.default;
    const wanted = [{ functionName, secs, histogram: true }];
    const [m] = await this.options.metrics.read(ref, wanted, { jobs: true });
    return { ...m!, window_secs: secs, function_name: functionName };
  }

  /**
   * Evaluates the project's enabled alerts that no process has evaluated for `tick` (default: the current
   * one): the claim is in the database, so concurrent calls for one tick evaluate each alert once.
   */
  async evaluate(ref: string, tick = this.tickAt()): Promise<TickResult> {
    const db = await this.options.dbs.project(ref);
    const claimed = await claimAlerts(db, tick);
    const result: TickResult = { evaluated: claimed.length, triggered: 0, resolved: 0, recovered: 0 };
    if (claimed.length === 0) return result;
    result.recovered = await this.recover(ref, db);
    const values = await this.values(ref, claimed);
    await recordValues(db, tick, claimed.map((a, i) => ({ id: a.id, value: values[i]! })));
    for (const [i, alert] of claimed.entries()) {
      const value = values[i]!;
      const to = this.decide(alert, value);
      if (!to) continue;
      const t: Transition = { alertId: alert.id, tick, to, value, threshold: alert.threshold };
      try {
        if (await this.transition(ref, db, alert, t)) result[to === "firing" ? "triggered" : "resolved"]++;
      } catch (err) {
        log.warn("alert transition failed", { project: ref, alert: alert.id, cause: describeError(err) });
      }
    }
    return result;
  }

  /** The state an alert moves to now, or null when it stays (no repeat while firing; none within the cooldown). */
  private decide(alert: ClaimedAlert, value: number | null): "firing" | "ok" | null {
    const met = meets(value, alert.condition, alert.threshold);
    if (alert.state === "firing") return met ? null : "ok";
    if (!met) return null;
    const last = alert.last_triggered_at ? new Date(alert.last_triggered_at).getTime() : null;
    if (last !== null && new Date(alert.now).getTime() - last < alert.cooldown_secs * 1000) return null;
    return "firing";
  }

  /** Each claimed alert's value, reading each distinct window once. */
  private async values(ref: string, alerts: ClaimedAlert[]): Promise<(number | null)[]> {
    const windows = new Map<string, number>();
    const wanted: WantedWindow[] = [];
    const slot = alerts.map((a) => {
      const key = `${a.function_name ?? ""}\n${a.window_secs}`;
      let at = windows.get(key);
      if (at === undefined) {
        windows.set(key, at = wanted.length);
        wanted.push({ functionName: a.function_name, secs: a.window_secs, histogram: false });
      }
      if (a.metric === "duration_p95_ms") wanted[at]!.histogram = true;
      return at;
    });
    const jobs = alerts.some((a) => isJobMetric(a.metric as Metric));
    const metrics = await this.options.metrics.read(ref, wanted, { jobs });
    return alerts.map((a, i) => metrics[slot[i]!]![a.metric as Metric]);
  }

  /** Records a change of state and its event, then sends its one notification; false when it lost the race. */
  private async transition(
    ref: string,
    db: Db,
    alert: AlertRow,
    t: Transition,
  ): Promise<boolean> {
    const event = await recordTransition(db, t);
    if (!event) return false;
    await this.notify(ref, db, alert, event);
    return true;
  }

  /**
   * Queues an event's one notification and remembers its id. Its idempotency key is the event's, so a second
   * call for the same event (another process recovering it) queues nothing more.
   */
  private async notify(ref: string, db: Db, alert: AlertRow, event: AlertEventRow): Promise<void> {
    const message = alertMessage(
      { ref, alert, status: event.status, value: event.value, at: new Date(event.created_at) },
      `alert-event:${event.id}`,
    );
    try {
      const notification = await this.options.notifications.send(ref, message);
      await setEventNotification(db, event.id, notification.id);
    } catch (err) {
      // The event stands; the notification could not be queued (its settings changed since the alert was made).
      log.warn("alert notification not sent", { project: ref, alert: alert.id, cause: describeError(err) });
    }
  }

  /** Sends what a process that stopped between an event and its notification left unsent. */
  private async recover(ref: string, db: Db): Promise<number> {
    const unsent = await unsentEvents(db, RECOVER_AFTER_SECS);
    for (const { event, alert } of unsent) await this.notify(ref, db, alert, event);
    return unsent.length;
  }

  private checkThreshold(metric: Metric, threshold: number): void {
    if (metric === "error_rate" && (threshold < 0 || threshold > 1)) {
      throw errors.validation('threshold: must be between 0 and 1 for metric "error_rate"');
    }
  }

  /** The name of an existing function, or 400. */
  private async functionNamed(ref: string, name: string): Promise<string> {
    try {
      return (await this.options.functions.get(ref, name)).name;
    } catch (err) {
      if (err instanceof AppError && err.status === 404) {
        throw errors.validation(`function_name: function "${name}" does not exist`);
      }
      throw err;
    }
  }

  private async find(db: Db, id: string): Promise<AlertRow> {
    const row = UUID.test(id) ? await getAlert(db, id) : null;
    if (!row) throw this.unknown(id);
    return row;
  }

  private unknown(id: string): AppError {
    return errors.notFound(`Alert "${id.slice(0, 100)}" does not exist`);
  }
}
