import type { SendInput } from "../notifications/service.ts";
import type { Channel } from "../notifications/providers/provider.ts";
import type { AlertRow } from "./store.ts";

const SYMBOL: Record<string, string> = { gt: ">", gte: ">=", lt: "<", lte: "<=", eq: "=" };

/** What happened to an alert, for its notification. */
export interface AlertNews {
  ref: string;
  alert: AlertRow;
  status: "triggered" | "resolved";
  value: number | null;
  at: Date;
}

/**
 * The notification of a change of state, on the alert's channel: a webhook gets `alert.triggered` or
 * `alert.resolved` with a JSON payload; email, SMS and push get a subject (the push title) and a short text.
 */
export function alertMessage(news: AlertNews, idempotencyKey: string): SendInput {
  const { alert, value } = news;
  const channel = alert.channel as Channel;
  const base = { channel, recipient: alert.destination, idempotencyKey };
  if (channel === "webhook") {
    return {
      ...base,
      event: `alert.${news.status}`,
      payload: {
        alert: {
          id: alert.id,
          name: alert.name,
          metric: alert.metric,
          condition: alert.condition,
          threshold: alert.threshold,
          function_name: alert.function_name,
        },
        value,
        window_secs: alert.window_secs,
        project_id: news.ref,
        at: news.at.toISOString(),
      },
    };
  }
  const scope = alert.function_name ? `function "${alert.function_name}"` : `project "${news.ref}"`;
  const rule = `${alert.metric} ${SYMBOL[alert.condition] ?? alert.condition} ${alert.threshold}`;
  const subject = news.status === "triggered"
    ? `Alert "${alert.name}" triggered: ${alert.metric} is ${value}`
    : `Alert "${alert.name}" resolved: ${alert.metric} is ${value}`;
  const body = news.status === "triggered"
    ? `${alert.metric} of ${scope} is ${value} over the last ${alert.window_secs} s (alert when ${rule}).`
    : `${alert.metric} of ${scope} is back to ${value} over the last ${alert.window_secs} s (alert when ${rule}).`;
  return channel === "sms" ? { ...base, body: `${subject}. ${body}` } : { ...base, subject, body };
}
