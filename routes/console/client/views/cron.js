/** Cron: list with next runs, create, pause, delete (/v1/functions/cron). */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { confirmed, ErrorBox, Field, formValues, html, Pager, parseJson, Table, useLoad } from "../ui.js";

const PAGE = 25;

export function CronView() {
  const list = useLoad(() => api("/v1/functions/cron").then((r) => r.data), []);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const done = () => (setError(null), list.reload());
  const save = (body) => api("/v1/functions/cron", { method: "POST", body }).then(done, setError);
  const create = (e) => {
    const v = formValues(e);
    try {
      save({
        name: v.name,
        schedule: v.schedule,
        function_name: v.function_name,
        payload: parseJson(v.payload, "Payload"),
      });
    } catch (err) {
      setError(err);
    }
  };
  const pick = ({ name, schedule, function_name, payload }) => ({ name, schedule, function_name, payload });
  const remove = (c) =>
    confirmed(
      `Delete cron entry "${c.name}"?`,
      () =>
        api(`/v1/functions/cron/${encodeURIComponent(c.name)}`, { method: "DELETE" }).then(done, setError),
    );
  const rows = (list.data ?? []).slice(offset, offset + PAGE);
  return html`
    <form class="inline" onSubmit=${create} aria-label="New cron entry">
      <${Field} id="c-name" label="Name"><input id="c-name" name="name" required /><//>
        <${Field} id="c-schedule" label="Schedule (6 fields, seconds first, UTC)"><input id="c-schedule" name="schedule"
          required placeholder="0 */5 * * * *" /><//>
        <${Field} id="c-fn" label="Function"><input id="c-fn" name="function_name" required /><//>
        <${Field} id="c-payload" label="Payload (JSON)"><input id="c-payload" name="payload" /><//>
        <button type="submit">Save entry</button>
      </form>
      <${ErrorBox} error=${list.error || error} />
      <${Table} caption="Cron entries" rows=${rows} empty="No cron entries" columns=${[
        { key: "name", label: "Name" },
        { key: "schedule", label: "Schedule" },
        { key: "function_name", label: "Function" },
        { key: "is_active", label: "Active", render: (c) => (c.is_active ? "yes" : "paused") },
        { key: "next_run", label: "Next run" },
        { key: "last_run", label: "Last run" },
        {
          key: "actions",
          label: "Actions",
          render: (c) =>
            html`<div class="actions">
        <button type="button" class="secondary" onClick=${() =>
              save({ ...pick(c), is_active: !c.is_active })}>${c.is_active ? "Pause" : "Resume"}</button>
        <button type="button" class="danger" onClick=${remove(c)}>Delete</button></div>`,
        },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  `;
}
