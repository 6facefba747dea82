/** Alerts: list, create, enable or disable, delete, events (/v1/functions/alerts). */
import { useState } from "preact/hooks";
import { api, qs } from "../api.js";
import { confirmed, ErrorBox, Field, formValues, html, Pager, Table, useLoad } from "../ui.js";

const PAGE = 25;
const METRICS = [
  "invocations",
  "errors",
  "error_rate",
  "timeouts",
  "duration_p95_ms",
  "duration_avg_ms",
  "jobs_failed",
  "jobs_dead",
  "dlq_depth",
];
const CONDITIONS = ["gt", "gte", "lt", "lte", "eq"];
const CHANNELS = ["email", "sms", "push", "webhook"];
const options = (list) => list.map((v) => html`<option>${v}</option>`);

export function AlertsView() {
  const [offset, setOffset] = useState(0);
  const [eventsOffset, setEventsOffset] = useState(0);
  const [error, setError] = useState(null);
  const list = useLoad(() => api(`/v1/functions/alerts${qs({ limit: PAGE, offset })}`).then((r) => r.data), [
    offset,
  ]);
  const events = useLoad(
    () => api(`/v1/functions/alerts/events${qs({ limit: PAGE, offset: eventsOffset })}`).then((r) => r.data),
    [eventsOffset],
  );
  const done = () => (setError(null), list.reload(), events.reload());
  const create = (e) => {
    const v = formValues(e);
    const body = {
      name: v.name,
      metric: v.metric,
      condition: v.condition,
      threshold: Number(v.threshold),
      channel: v.channel,
      destination: v.destination,
      ...(v.function_name ? { function_name: v.function_name } : {}),
      ...(v.window_secs ? { window_secs: Number(v.window_secs) } : {}),
    };
    api("/v1/functions/alerts", { method: "POST", body }).then(done, setError);
  };
  const toggle = (a) =>
    api(`/v1/functions/alerts/${a.id}`, { method: "PATCH", body: { enabled: !a.enabled } }).then(
      done,
      setError,
    );
  const remove = (a) =>
    confirmed(
      `Delete alert "${a.name}"?`,
      () => api(`/v1/functions/alerts/${a.id}`, { method: "DELETE" }).then(done, setError),
    );
  const rows = list.data ?? [];
  const eventRows = events.data ?? [];
  return html`
    <details class="card">
      <summary>New alert</summary>
      <form class="inline" onSubmit=${create}>
        <${Field} id="a-name" label="Name"><input id="a-name" name="name" required /><//>
          <${Field} id="a-metric" label="Metric"><select id="a-metric" name="metric">${options(
            METRICS,
          )}</select><//>
          <${Field} id="a-cond" label="Condition"><select id="a-cond" name="condition">${options(
            CONDITIONS,
          )}</select><//>
          <${Field} id="a-threshold" label="Threshold"><input id="a-threshold" name="threshold" type="number" step="any"
            required /><//>
          <${Field} id="a-channel" label="Channel"><select id="a-channel" name="channel">${options(
            CHANNELS,
          )}</select><//>
          <${Field} id="a-dest" label="Destination"><input id="a-dest" name="destination" required /><//>
          <${Field} id="a-fn" label="Function (empty: whole project)"><input id="a-fn" name="function_name" /><//>
          <${Field} id="a-window" label="Window (s)"><input id="a-window" name="window_secs" type="number" min="60" /><//>
          <button type="submit">Create alert</button>
        </form></details>
      <${ErrorBox} error=${list.error || error} />
      <${Table} caption="Alerts" rows=${rows} empty="No alerts" columns=${[
        { key: "name", label: "Name" },
        { key: "rule", label: "Rule", render: (a) => `${a.metric} ${a.condition} ${a.threshold}` },
        { key: "function_name", label: "Function" },
        {
          key: "state",
          label: "State",
          render: (a) => html`<span class=${`badge ${a.state}`}>${a.state}</span>`,
        },
        { key: "last_value", label: "Last value" },
        { key: "enabled", label: "Enabled", render: (a) => (a.enabled ? "yes" : "no") },
        {
          key: "actions",
          label: "Actions",
          render: (a) =>
            html`<div class="actions">
        <button type="button" class="secondary" onClick=${() => toggle(a)}>${
              a.enabled ? "Disable" : "Enable"
            }</button>
        <button type="button" class="danger" onClick=${remove(a)}>Delete</button></div>`,
        },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows
        .length} onChange=${setOffset} label="Alert pages" />
      <h2>Events</h2>
      <${ErrorBox} error=${events.error} />
      <${Table} caption="Alert events" rows=${eventRows} empty="No events yet" columns=${[
        { key: "created_at", label: "Time" },
        {
          key: "alert_id",
          label: "Alert",
          render: (e) => rows.find((a) => a.id === e.alert_id)?.name ?? e.alert_id,
        },
        { key: "status", label: "Status" },
        { key: "value", label: "Value" },
        { key: "threshold", label: "Threshold" },
      ]} />
      <${Pager} offset=${eventsOffset} limit=${PAGE} count=${eventRows.length} onChange=${setEventsOffset}
        label="Event pages" />
  `;
}
