/** Jobs: enqueue, filter by status, detail, retry; the dead-letter queue and its requeue (/v1/functions/jobs). */
import { useState } from "preact/hooks";
import { api, qs } from "../api.js";
import {
  confirmed,
  ErrorBox,
  Field,
  formValues,
  html,
  Json,
  Pager,
  parseJson,
  Table,
  Tabs,
  useLoad,
} from "../ui.js";

const PAGE = 25;
const STATUSES = ["pending", "running", "completed", "failed", "dead"];

export function JobsView() {
  const [tab, setTab] = useState("jobs");
  const [status, setStatus] = useState("");
  const [offset, setOffset] = useState(0);
  const [selected, setSelected] = useState(null);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const path = tab === "dlq" ? "/v1/functions/jobs/dlq" : "/v1/functions/jobs";
  const list = useLoad(
    () => api(path + qs({ status: tab === "dlq" ? "" : status, limit: PAGE, offset })).then((r) => r.data),
    [tab, status, offset],
  );
  const detail = useLoad(
    () => (selected ? api(`/v1/functions/jobs/${selected}`).then((r) => r.data) : Promise.resolve(null)),
    [selected],
  );
  const act = (fn) => fn().then(() => (setError(null), list.reload(), detail.reload()), setError);
  const enqueue = (e) => {
    const v = formValues(e);
    act(async () => {
      const body = { function_name: v.function_name };
      const payload = parseJson(v.payload, "Payload");
      if (payload !== undefined) body.payload = payload;
      if (v.max_attempts) body.max_attempts = Number(v.max_attempts);
      const { data } = await api("/v1/functions/jobs", { method: "POST", body });
      setNote(`Job ${data.id} enqueued`);
    });
  };
  const requeue = confirmed("Put every dead job back to pending?", () =>
    act(async () => {
      const { data } = await api("/v1/functions/jobs/dlq/requeue", { method: "POST" });
      setNote(`${data.requeued} job(s) requeued`);
    }));
  const retry = (id) => act(() => api(`/v1/functions/jobs/${id}/retry`, { method: "POST" }));
  const rows = list.data ?? [];
  return html`
    <details class="card">
      <summary>Enqueue a job</summary>
      <form class="inline" onSubmit=${enqueue}>
        <${Field} id="job-fn" label="Function"><input id="job-fn" name="function_name" required /><//>
          <${Field} id="job-payload" label="Payload (JSON)"><input id="job-payload" name="payload" /><//>
          <${Field} id="job-attempts" label="Max attempts"><input id="job-attempts" name="max_attempts" type="number"
            min="1" max="25" /><//>
          <button type="submit">Enqueue</button>
        </form></details>
      <${Tabs} label="Jobs" current=${tab} onChange=${(t) => (setOffset(0), setTab(t))}
        tabs=${[["jobs", "All jobs"], ["dlq", "Dead letters"]]} />
      <div class="inline">
        ${tab === "jobs" &&
          html`<${Field} id="job-status" label="Status"><select id="job-status" value=${status}
      onChange=${(e) => (setOffset(0), setStatus(e.currentTarget.value))}>
      <option value="">any</option>${STATUSES.map((s) => html`<option>${s}</option>`)}
    </select><//>`}
        ${tab === "dlq" && html`<button type="button" onClick=${requeue}>Requeue all dead jobs</button>`}
        <button type="button" class="secondary" onClick=${list.reload}>Refresh</button>
      </div>
      ${note && html`<p class="note" role="status">${note}</p>`}
      <${ErrorBox} error=${error || list.error} />
      <${Table} caption=${tab === "dlq" ? "Dead jobs" : "Jobs"} rows=${rows} empty="No jobs" columns=${[
        {
          key: "id",
          label: "Job",
          render: (j) =>
            html`<button type="button" class="link" onClick=${() => setSelected(j.id)}>${
              j.id.slice(0, 8)
            }</button>`,
        },
        { key: "function_name", label: "Function" },
        {
          key: "status",
          label: "Status",
          render: (j) => html`<span class=${`badge ${j.status}`}>${j.status}</span>`,
        },
        { key: "attempts", label: "Attempts", render: (j) => `${j.attempts}/${j.max_attempts}` },
        { key: "error", label: "Error" },
        { key: "created_at", label: "Created" },
        {
          key: "retry",
          label: "Actions",
          render: (j) =>
            j.status === "failed" || j.status === "dead"
              ? html`<button type="button" class="secondary" onClick=${() => retry(j.id)}>Retry</button>`
              : null,
        },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
      ${detail.data &&
        html`<section class="card" aria-labelledby="job-detail"><h2 id="job-detail">Job ${detail.data.id}</h2>
    <${Json} value=${detail.data} label="Job" />
    <button type="button" class="secondary" onClick=${() => setSelected(null)}>Close</button></section>`}
  `;
}
