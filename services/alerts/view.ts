import type { Channel } from "../notifications/providers/provider.ts";
import type { Metric } from "./metrics.ts";
import type { Condition } from "./service.ts";
import type { AlertEventRow, AlertRow } from "./store.ts";

/** An alert as the API returns it (docs/alerts.md), times in ISO 8601. */
export interface AlertObject {
  id: string;
  project_id: string;
  name: string;
  metric: Metric;
  condition: Condition;
  threshold: number;
  channel: Channel;
  destination: string;
  function_name: string | null;
  window_secs: number;
  cooldown_secs: number;
  enabled: boolean;
  state: "ok" | "firing";
  last_value: number | null;
  last_evaluated_at: string | null;
  created_at: string;
  updated_at: string;
}

/** An alert event as the API returns it. */
export interface AlertEventObject {
  id: string;
  alert_id: string;
  status: "triggered" | "resolved";
  value: number | null;
  threshold: number;
  notification_id: string | null;
  created_at: string;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const num = (v: number | string | null) => (v === null ? null : Number(v));

/** The API shape of an alert row. */
export function alertView(ref: string, row: AlertRow): AlertObject {
  return {
    id: row.id,
    project_id: ref,
    name: row.name,
    metric: row.metric as Metric,
    condition: row.condition as Condition,
    threshold: Number(row.threshold),
    channel: row.channel as Channel,
    destination: row.destination,
    function_name: row.function_name,
    window_secs: Number(row.window_secs),
    cooldown_secs: Number(row.cooldown_secs),
    enabled: row.enabled,
    state: row.state,
    last_value: num(row.last_value),
    last_evaluated_at: iso(row.last_evaluated_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** The API shape of an alert event row. */
export function eventView(row: AlertEventRow): AlertEventObject {
  return {
    id: row.id,
    alert_id: row.alert_id,
    status: row.status,
    value: num(row.value),
    threshold: Number(row.threshold),
    notification_id: row.notification_id,
    created_at: iso(row.created_at)!,
  };
}
