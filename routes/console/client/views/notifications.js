/** Notifications: list with filters, attempts, provider logs, dead letters, templates with live preview,
 * rules, stats chart, settings with write-only secrets (the notifications API, /v1/notifications). */
import { useEffect, useState } from "preact/hooks";
import { api, qs } from "../api.js";
import {
  BarChart,
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
const CHANNELS = ["email", "sms", "push", "webhook"];
const STATUSES = ["queued", "sending", "sent", "delivered", "failed", "dead_lettered", "suppressed"];
const badge = (s) => html`<span class=${`badge ${s}`}>${s}</span>`;

export function NotificationsView() {
  const [tab, setTab] = useState("list");
  const tabs = [
    ["list", "Notifications"],
    ["dlq", "Dead letters"],
    ["templates", "Templates"],
    ["rules", "Rules"],
    ["logs", "Provider logs"],
    ["stats", "Stats"],
    ["settings", "Settings"],
  ];
  const View = {
    list: List,
    dlq: DeadLetters,
    templates: Templates,
    rules: Rules,
    logs: ProviderLogs,
    stats: Stats,
    settings: Settings,
  }[tab];
  return html`
    <${Tabs} label="Notifications" current=${tab} onChange=${setTab} tabs=${tabs} />
    <${View} />
  `;
}

function ChannelSelect({ id, value, onChange, any = true, name }) {
  return html`<select id=${id} name=${name} value=${value} onChange=${
    onChange && ((e) => onChange(e.currentTarget.value))
  }>
    ${any && html`<option value="">any</option>`}${CHANNELS.map((c) => html`<option>${c}</option>`)}
  </select>`;
}

function List() {
  const [filter, setFilter] = useState({ channel: "", status: "", search: "" });
  const [offset, setOffset] = useState(0);
  const [selected, setSelected] = useState(null);
  const list = useLoad(
    () => api(`/v1/notifications${qs({ ...filter, limit: PAGE, offset })}`).then((r) => r.data),
    [filter, offset],
  );
  const apply = (e) => {
    setOffset(0);
    setFilter(formValues(e));
  };
  const rows = list.data ?? [];
  return html`
    <form class="inline" onSubmit=${apply} aria-label="Filter notifications">
      <${Field} id="n-channel" label="Channel">
        <${ChannelSelect} id="n-channel" name="channel" />
        <//>
        <${Field} id="n-status"
          label="Status"><select id="n-status" name="status"><option value="">any</option>
          ${STATUSES.map((s) => html`<option>${s}</option>`)}</select><//>
        <${Field} id="n-search" label="Search"><input id="n-search" name="search" placeholder="recipient" /><//>
        <button type="submit">Filter</button>
      </form>
      <${ErrorBox} error=${list.error} />
      <${Table} caption="Notifications" rows=${rows} empty="No notifications" columns=${[
        {
          key: "id",
          label: "Id",
          render: (n) =>
            html`<button type="button" class="link" onClick=${() => setSelected(n.id)}>${
              n.id.slice(0, 8)
            }</button>`,
        },
        { key: "channel", label: "Channel" },
        { key: "recipient", label: "Recipient" },
        { key: "status", label: "Status", render: (n) => badge(n.status) },
        { key: "attempts", label: "Attempts" },
        { key: "created_at", label: "Created" },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
      ${selected && html`<${Detail} id=${selected} onClose=${() => setSelected(null)} />`}
  `;
}

function Detail({ id, onClose }) {
  const n = useLoad(
    () =>
      Promise.all([api(`/v1/notifications/${id}`), api(`/v1/notifications/${id}/attempts`)])
        .then(([a, b]) => ({ notification: a.data, attempts: b.data })),
    [id],
  );
  const [error, setError] = useState(null);
  const retry = () => api(`/v1/notifications/${id}/retry`, { method: "POST" }).then(n.reload, setError);
  return html`<section class="card" aria-labelledby="n-detail"><h2 id="n-detail">Notification ${id}</h2>
    <${ErrorBox} error=${n.error || error} />
    ${
    n.data && html`
      <${Json} value=${n.data.notification} label="Notification" />
      <h3>Attempts and provider answers</h3>
      <${Table} caption="Attempts" rows=${n.data.attempts} empty="No attempts yet" columns=${Object.keys(
        n.data.attempts[0] ?? { attempt: 1 },
      ).map((k) => ({ key: k, label: k }))} />
    `
  }
    <div class="actions"><button type="button" class="secondary" onClick=${retry}>Retry now</button>
    <button type="button" class="secondary" onClick=${onClose}>Close</button></div>
  </section>`;
}

function DeadLetters() {
  const [channel, setChannel] = useState("");
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const list = useLoad(
    () => api(`/v1/notifications/dead-letters${qs({ channel, limit: PAGE, offset })}`).then((r) => r.data),
    [channel, offset],
  );
  const retry = (id) =>
    api(`/v1/notifications/dead-letters/${id}/retry`, { method: "POST" }).then(list.reload, setError);
  const rows = list.data ?? [];
  return html`
    <div class="inline">
      <${Field} id="dl-channel" label="Channel">
        <${ChannelSelect} id="dl-channel" value=${channel} onChange=${(v) => (setOffset(0), setChannel(v))} />
        <//>
        </div>
        <${ErrorBox} error=${list.error || error} />
        <${Table} caption="Dead letters" rows=${rows} empty="The dead-letter queue is empty"
          columns=${[
            { key: "id", label: "Id", render: (n) => n.id.slice(0, 8) },
            { key: "channel", label: "Channel" },
            { key: "recipient", label: "Recipient" },
            { key: "last_error", label: "Last error" },
            { key: "updated_at", label: "Dead since" },
            {
              key: "retry",
              label: "Actions",
              render: (n) =>
                html`<button type="button" class="secondary" onClick=${() => retry(n.id)}>Retry</button>`,
            },
          ]} />
        <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  `;
}

function Templates() {
  const list = useLoad(() => api("/v1/notifications/templates").then((r) => r.data), []);
  const [selected, setSelected] = useState(null);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const create = (e) => {
    const v = formValues(e);
    api("/v1/notifications/templates", {
      method: "POST",
      body: { name: v.name, channel: v.channel, subject: v.subject || null, body: v.body },
    }).then((r) => {
      setError(null);
      list.reload();
      setSelected(r.data.id);
    }, setError);
  };
  const rows = (list.data ?? []).slice(offset, offset + PAGE);
  const current = (list.data ?? []).find((t) => t.id === selected);
  return html`
    <details class="card">
      <summary>New template</summary>
      <form class="stack" onSubmit=${create}>
        <div class="row">
          <${Field} id="t-name" label="Name"><input id="t-name" name="name" required /><//>
            <${Field} id="t-channel" label="Channel"><${ChannelSelect} id="t-channel" name="channel" any=${false} /><//>
          </div>
          <${Field} id="t-subject" label="Subject"><input id="t-subject" name="subject" /><//>
          <${Field} id="t-body" label="Body" hint="LiquidJS: Hello {{ user.name }}"><textarea id="t-body" name="body"
            rows="4" class="code" required></textarea><//>
          <button type="submit">Create template</button>
        </form></details>
      <${ErrorBox} error=${list.error || error} />
      <${Table} caption="Templates" rows=${rows} empty="No templates" columns=${[
        {
          key: "name",
          label: "Name",
          render: (t) =>
            html`<button type="button" class="link" onClick=${() => setSelected(t.id)}>${t.name}</button>`,
        },
        { key: "channel", label: "Channel" },
        { key: "subject", label: "Subject" },
        { key: "updated_at", label: "Updated" },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
      ${current && html`
        <${TemplateEditor} key=${current.id} template=${current} onSaved=${list.reload}
          onDeleted=${() => (setSelected(null), list.reload())} />
      `}
  `;
}

function TemplateEditor({ template, onSaved, onDeleted }) {
  const [vars, setVars] = useState("{}");
  const [preview, setPreview] = useState(null);
  const [error, setError] = useState(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const timer = setTimeout(() => {
      let variables;
      try {
        variables = parseJson(vars, "Variables") ?? {};
      } catch (err) {
        setError(err);
        return;
      }
      api(`/v1/notifications/templates/${template.id}/preview`, { method: "POST", body: { variables } })
        .then((r) => (setError(null), setPreview(r.data)), (err) => (setPreview(null), setError(err)));
    }, 250);
    return () => clearTimeout(timer);
  }, [vars, version]);
  const save = (e) => {
    const v = formValues(e);
    api(`/v1/notifications/templates/${template.id}`, {
      method: "PATCH",
      body: { name: v.name, subject: v.subject || null, body: v.body },
    }).then(() => (setVersion((n) => n + 1), onSaved()), setError);
  };
  const remove = confirmed(
    `Delete template "${template.name}"?`,
    () => api(`/v1/notifications/templates/${template.id}`, { method: "DELETE" }).then(onDeleted, setError),
  );
  return html`
    <section class="card" aria-labelledby="t-edit">
      <h2 id="t-edit">Template ${template.name}</h2>
      <div class="split">
        <form class="stack" onSubmit=${save} aria-label="Edit template">
          <${Field} id="te-name" label="Name"><input id="te-name" name="name" value=${template.name} /><//>
          <${Field} id="te-subject" label="Subject"><input id="te-subject" name="subject" value=${template
            .subject ?? ""} /><//>
          <${Field} id="te-body" label="Body"><textarea id="te-body" name="body" rows="6" class="code">${template
            .body}</textarea><//>
          <div class="actions"><button type="submit">Save</button>
            <button type="button" class="danger" onClick=${remove}>Delete template</button></div>
        </form>
        <div>
          <${Field} id="te-vars" label="Variables (JSON)" hint="The preview follows as you type">
            <textarea id="te-vars" rows="4" class="code" value=${vars}
              onInput=${(e) => setVars(e.currentTarget.value)}></textarea><//>
          <${ErrorBox} error=${error} />
          ${preview && html`<div class="preview" aria-live="polite" data-testid="template-preview">
        ${preview.subject != null && html`<p><strong>Subject:</strong> ${preview.subject}</p>`}
        <pre>${preview.body}</pre></div>`}
        </div>
      </div></section>
  `;
}

function Rules() {
  const list = useLoad(() => api("/v1/notifications/rules").then((r) => r.data), []);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const done = () => (setError(null), list.reload());
  const create = (e) => {
    const v = formValues(e);
    const form = e.currentTarget;
    api("/v1/notifications/rules", {
      method: "POST",
      body: {
        name: v.name,
        trigger_type: v.trigger_type,
        condition: v.condition || "true",
        channel: v.channel,
        recipient_expr: v.recipient_expr,
        template_id: v.template_id || null,
        body: v.body || null,
      },
    }).then(() => (form.reset(), done()), setError);
  };
  const toggle = (r) =>
    api(`/v1/notifications/rules/${r.id}`, { method: "PATCH", body: { enabled: !r.enabled } }).then(
      done,
      setError,
    );
  const remove = (r) =>
    confirmed(
      `Delete rule "${r.name}"?`,
      () => api(`/v1/notifications/rules/${r.id}`, { method: "DELETE" }).then(done, setError),
    );
  const rows = (list.data ?? []).slice(offset, offset + PAGE);
  return html`
    <details class="card">
      <summary>New rule</summary>
      <form class="stack" onSubmit=${create}>
        <div class="row">
          <${Field} id="r-name" label="Name"><input id="r-name" name="name" required /><//>
            <${Field} id="r-trigger" label="Event type"><input id="r-trigger" name="trigger_type" required
              placeholder="user.signup" /><//>
            <${Field} id="r-channel" label="Channel"><${ChannelSelect} id="r-channel" name="channel" any=${false} /><//>
          </div>
          <${Field} id="r-cond" label="Condition (CEL over event)"><input id="r-cond" name="condition" placeholder="true" /><//>
          <${Field} id="r-recipient" label="Recipient (CEL)"><input id="r-recipient" name="recipient_expr" required
            placeholder="event.data.email" /><//>
          <${Field} id="r-template" label="Template id"><input id="r-template" name="template_id" /><//>
          <${Field} id="r-body" label="Body (without a template)"><textarea id="r-body" name="body" rows="2"></textarea><//>
          <button type="submit">Create rule</button>
        </form></details>
      <${ErrorBox} error=${list.error || error} />
      <${Table} caption="Rules" rows=${rows} empty="No rules" columns=${[
        { key: "name", label: "Name" },
        { key: "trigger_type", label: "Event type" },
        { key: "channel", label: "Channel" },
        { key: "condition", label: "Condition" },
        { key: "enabled", label: "Enabled", render: (r) => (r.enabled ? "yes" : "no") },
        {
          key: "actions",
          label: "Actions",
          render: (r) =>
            html`<div class="actions">
      <button type="button" class="secondary" onClick=${() => toggle(r)}>${
              r.enabled ? "Disable" : "Enable"
            }</button>
      <button type="button" class="danger" onClick=${remove(r)}>Delete</button></div>`,
        },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  `;
}

function ProviderLogs() {
  const [offset, setOffset] = useState(0);
  const [status, setStatus] = useState("");
  const list = useLoad(
    () => api(`/v1/notifications/providers/logs${qs({ status, limit: PAGE, offset })}`).then((r) => r.data),
    [status, offset],
  );
  const rows = list.data ?? [];
  return html`
    <div class="inline">
      <${Field} id="pl-status" label="Outcome"><select id="pl-status" value=${status}
        onChange=${(e) => (setOffset(0), setStatus(e.currentTarget.value))}><option value="">any</option>
        <option>success</option><option>error</option></select><//></div>
      <${ErrorBox} error=${list.error} />
      <${Table} caption="Provider logs" rows=${rows} empty="No provider calls yet"
        columns=${Object.keys(rows[0] ?? { channel: 1 }).map((k) => ({ key: k, label: k }))} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  `;
}

function Stats() {
  const [window, setWindow] = useState("24h");
  const stats = useLoad(() => api(`/v1/notifications/stats?window=${window}`).then((r) => r.data), [window]);
  const s = stats.data;
  return html`
    <div class="inline">
      <${Field} id="ns-window" label="Window"><select id="ns-window" value=${window}
        onChange=${(e) => setWindow(e.currentTarget.value)}>${["1h", "24h", "7d", "30d"].map((w) =>
          html`<option>${w}</option>`
        )}</select><//></div>
      <${ErrorBox} error=${stats.error} />
      ${s && html`
        <p>${s.total} notification(s); success rate ${s.success_rate === null
          ? "—"
          : `${Math.round(s.success_rate * 100)}%`}; queued→sent p50 ${s.queued_to_sent_ms.p50 ??
          "—"} ms, p95 ${s.queued_to_sent_ms.p95 ?? "—"} ms</p>
        <div class="charts">
          <${BarChart} title="By status" bars=${Object.entries(s.by_status).map(([label, value]) => ({
            label,
            value,
            tone: /failed|dead/.test(label) ? "bad" : "",
          }))} />
          <${BarChart} title="By channel" bars=${Object.entries(s.by_channel).map(([label, v]) => ({
            label,
            value: v.total,
          }))} />
        </div>
      `}
  `;
}

function Settings() {
  const current = useLoad(() => api("/v1/notifications/settings").then((r) => r.data), []);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const save = (e) => {
    const v = formValues(e);
    const form = e.currentTarget;
    (async () => {
      const patch = parseJson(v.patch, "Settings") ?? {};
      // Secrets are write-only: sent when typed, never shown back (the API answers *_set).
      const secret = (section, key, value) => {
        if (value) patch[section] = { ...(patch[section] ?? {}), [key]: value };
      };
      secret("email", "pass", v.email_pass);
      secret("sms", "auth_token", v.sms_token);
      secret("webhook", "secret", v.webhook_secret);
      await api("/v1/notifications/settings", { method: "PATCH", body: patch });
      form.reset();
      setError(null);
      setNote("Settings saved");
      current.reload();
    })().catch(setError);
  };
  return html`
    <div class="split">
      <section><h2>Current settings</h2>
        <${ErrorBox} error=${current.error} />${current.data &&
          html`<${Json} value=${current.data} label="Settings" />`}
      </section>
      <form class="stack" onSubmit=${save} aria-label="Change settings">
        <h2>Change</h2>
        <${Field} id="s-patch" label="Changes (JSON)" hint='e.g. {"retry": {"max_attempts": 5}}'>
          <textarea id="s-patch" name="patch" rows="6" class="code"></textarea>
          <//>
          <${Field} id="s-email-pass"
            label="SMTP password (write-only)"><input id="s-email-pass" name="email_pass"
          type="password" autocomplete="new-password" /><//>
        <${Field} id="s-sms-token" label="SMS auth token (write-only)"><input id="s-sms-token" name="sms_token"
          type="password" autocomplete="new-password" /><//>
        <${Field} id="s-webhook" label="Webhook signing secret (write-only)"><input id="s-webhook" name="webhook_secret"
          type="password" autocomplete="new-password" placeholder="whsec_…" /><//>
        <${ErrorBox} error=${error} />${note && html`<p class="note" role="status">${note}</p>`}
        <button type="submit">Save settings</button>
      </form></div>
  `;
}
