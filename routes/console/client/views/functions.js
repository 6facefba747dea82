/** Functions: list, editor with deploy, invoke panel, logs, stats chart (the functions API, /v1/functions). */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import {
  BarChart,
  confirmed,
  ErrorBox,
  Field,
  formValues,
  html,
  Json,
  Pager,
  Table,
  Tabs,
  useLoad,
} from "../ui.js";

const PAGE = 20;
const SAMPLE = `export default {
  fetch(req) {
    console.log("called", req.method, new URL(req.url).pathname);
    return Response.json({ hello: "world" });
  },
};`;

export function FunctionsView() {
  const list = useLoad(() => api("/v1/functions").then((r) => r.data), []);
  const [offset, setOffset] = useState(0);
  const [selected, setSelected] = useState(null); // a name, or "" for a new function
  const [tab, setTab] = useState("editor");
  const open = (name, t = "editor") => {
    setSelected(name);
    setTab(t);
  };
  const rows = (list.data ?? []).slice(offset, offset + PAGE);
  const fn = (list.data ?? []).find((f) => f.name === selected) ?? null;
  return html`<div class="split">
  <section aria-labelledby="fn-list">
    <h2 id="fn-list">Functions</h2>
    <button type="button" onClick=${() => open("")}>New function</button>
    <${ErrorBox} error=${list.error} />
    <${Table} caption="Functions" rows=${rows} empty="No functions yet: deploy one" columns=${[
    {
      key: "name",
      label: "Name",
      render: (f) =>
        html`<button type="button" class="link" onClick=${() => open(f.name)}>${f.name}</button>`,
    },
    { key: "runtime", label: "Runtime" },
    { key: "is_active", label: "Active", render: (f) => (f.is_active ? "yes" : "no") },
    { key: "updated_at", label: "Updated" },
  ]} />
    <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  </section>
  ${
    selected !== null &&
    html`<section aria-labelledby="fn-detail" class="detail">
    <h2 id="fn-detail">${selected || "New function"}</h2>
    ${
      selected &&
      html`<${Tabs} label="Function" current=${tab} onChange=${setTab} tabs=${[
        ["editor", "Editor"],
        ["invoke", "Invoke"],
        ["logs", "Logs"],
        ["stats", "Stats"],
      ]} />`
    }
    ${
      (tab === "editor" || !selected) &&
      html`<${Editor} key=${selected} fn=${fn} onDeployed=${(name) => {
        list.reload();
        open(name, "invoke");
      }} onDeleted=${() => {
        setSelected(null);
        list.reload();
      }} />`
    }
    ${selected && tab === "invoke" && html`<${Invoke} name=${selected} />`}
    ${selected && tab === "logs" && html`<${Logs} name=${selected} />`}
    ${selected && tab === "stats" && html`<${Stats} name=${selected} />`}
  </section>`
  }
  </div>`;
}

function envText(vars) {
  return Object.entries(vars ?? {}).map(([k, v]) => `${k}=${v}`).join("\n");
}

function parseEnv(text) {
  const vars = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const i = line.indexOf("=");
    if (i < 1) throw new Error(`Environment line "${line}" is not KEY=value`);
    vars[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return vars;
}

function Editor({ fn, onDeployed, onDeleted }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const p = fn?.permissions;
  const deploy = (e) => {
    const v = formValues(e);
    setBusy(true);
    (async () => {
      const permissions = {
        allow_net: v.allow_net.split(",").map((s) => s.trim()).filter(Boolean),
        ...(v.memory_mb ? { memory_mb: Number(v.memory_mb) } : {}),
        ...(v.timeout_secs ? { timeout_secs: Number(v.timeout_secs) } : {}),
        ...(v.cpu_ms ? { cpu_ms: Number(v.cpu_ms) } : {}),
      };
      const body = {
        name: v.name,
        runtime: v.runtime,
        code: v.code,
        env_vars: parseEnv(v.env_vars),
        permissions,
        is_active: v.is_active === "on",
      };
      await api("/v1/functions", { method: "POST", body });
      setError(null);
      onDeployed(v.name);
    })().catch(setError).finally(() => setBusy(false));
  };
  const remove = confirmed(
    `Delete function "${fn?.name}"? Its code, logs and stats go with it.`,
    () => api(`/v1/functions/${encodeURIComponent(fn.name)}`, { method: "DELETE" }).then(onDeleted, setError),
  );
  return html`
    <form class="stack" onSubmit=${deploy} aria-label="Deploy">
      <${Field} id="fn-name" label="Name"><input id="fn-name" name="name" required value=${fn?.name ?? ""}
          readOnly=${!!fn} pattern="[a-z][a-z0-9_\\-]{0,62}" /><//>
        <${Field} id="fn-runtime" label="Runtime"><select id="fn-runtime" name="runtime" value=${fn
          ?.runtime ?? "deno"}>
          <option value="deno">deno (TypeScript / JavaScript)</option><option value="wasm">wasm (base64 module)</option>
        </select><//>
        <${Field} id="fn-code" label="Code"><textarea id="fn-code" name="code" rows="14" class="code" spellcheck="false"
          required>${fn?.code ?? SAMPLE}</textarea><//>
        <${Field} id="fn-env" label="Environment variables" hint="One KEY=value a line; replaces the set">
          <textarea id="fn-env" name="env_vars" rows="3" class="code">${envText(fn?.env_vars)}</textarea><//>
        <fieldset><legend>Permissions</legend>
          <${Field} id="fn-net" label="Allowed hosts (comma-separated)"><input id="fn-net" name="allow_net"
            value=${(p?.allow_net ?? []).join(", ")} /><//>
          <div class="row">
            <${Field} id="fn-mem" label="Memory (MB)"><input id="fn-mem" name="memory_mb" type="number" min="1"
              value=${p?.memory_mb ?? ""} /><//>
            <${Field} id="fn-timeout" label="Timeout (s)"><input id="fn-timeout" name="timeout_secs" type="number" min="1"
              value=${p?.timeout_secs ?? ""} /><//>
            <${Field} id="fn-cpu" label="CPU per call (ms)"><input id="fn-cpu" name="cpu_ms" type="number" min="1"
              value=${p?.cpu_ms ?? ""} /><//>
          </div>
        </fieldset>
        <div class="check"><input id="fn-active" name="is_active" type="checkbox" checked=${fn?.is_active ??
          true} />
          <label for="fn-active">Active</label></div>
        <${ErrorBox} error=${error} />
        <div class="actions">
          <button type="submit" disabled=${busy}>${busy ? "Deploying…" : "Deploy"}</button>
          ${fn && html`<button type="button" class="danger" onClick=${remove}>Delete function</button>`}
        </div>
      </form>
  `;
}

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const i = line.indexOf(":");
    if (i < 1) throw new Error(`Header line "${line}" is not "Name: value"`);
    headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return headers;
}

function Invoke({ name }) {
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const run = (e) => {
    const v = formValues(e);
    setBusy(true);
    (async () => {
      let body = v.body;
      try {
        body = v.body.trim() ? JSON.parse(v.body) : undefined;
      } catch {
        body = v.body; // text
      }
      const logs = `/v1/functions/${encodeURIComponent(name)}/logs`;
      const [last] = (await api(`${logs}?limit=1`)).data ?? [];
      const { data } = await api(`/v1/functions/${encodeURIComponent(name)}/invoke`, {
        method: "POST",
        body: { method: v.method, path: v.path || "/", headers: parseHeaders(v.headers), body },
      });
      // A deno function's console output goes to its log, not to the answer: show the lines this call wrote.
      const written = [];
      for (const line of (await api(`${logs}?limit=200`)).data ?? []) {
        if (
          last && (line.timestamp < last.timestamp || (line.timestamp === last.timestamp &&
            line.message === last.message))
        ) break;
        written.unshift(`${line.level}: ${line.message}`);
      }
      setError(null);
      setResult({ ...data, logs: [...data.logs, ...written] });
    })().catch((err) => {
      setResult(null);
      setError(err);
    }).finally(() => setBusy(false));
  };
  return html`
    <form class="stack" onSubmit=${run} aria-label="Invoke">
      <div class="row">
        <${Field} id="inv-method" label="Method"><select id="inv-method" name="method">
            ${["GET", "POST", "PUT", "PATCH", "DELETE"].map((m) => html`<option>${m}</option>`)}
          </select><//>
          <${Field} id="inv-path" label="Path"><input id="inv-path" name="path" value="/" /><//>
        </div>
        <${Field} id="inv-headers" label="Headers" hint="One Name: value a line">
          <textarea id="inv-headers" name="headers" rows="2" class="code"></textarea><//>
        <${Field} id="inv-body" label="Body" hint="JSON or text"><textarea id="inv-body" name="body" rows="4"
          class="code"></textarea><//>
        <button type="submit" disabled=${busy}>${busy ? "Invoking…" : "Invoke"}</button>
      </form>
      <${ErrorBox} error=${error} />
      ${result &&
        html`
          <div class="result" aria-live="polite">
            <p><strong>Status</strong> <span class="status" data-testid="invoke-status">${result
              .status}</span>
                · <strong>Duration</strong> ${Math.round(result.duration_ms * 10) / 10} ms</p>
            <h3>Headers</h3>
            <${Json} value=${result.headers} label="Response headers" />
            <h3>Body</h3>
            <${Json} value=${result.body} label="Response body" />
            <h3>Logs</h3>
            <${Json} value=${result.logs.join("\n") || "(none)"} label="Logs" />
          </div>
        `}
  `;
}

function Logs({ name }) {
  const [level, setLevel] = useState("");
  const [offset, setOffset] = useState(0);
  const logs = useLoad(
    () =>
      api(`/v1/functions/${encodeURIComponent(name)}/logs?limit=1000${level ? `&level=${level}` : ""}`)
        .then((r) => r.data),
    [name, level],
  );
  const rows = (logs.data ?? []).slice(offset, offset + 50);
  return html`
    <div class="inline">
      <${Field} id="log-level" label="Level"><select id="log-level" value=${level}
          onChange=${(e) => (setOffset(0), setLevel(e.currentTarget.value))}>
          <option value="">all</option>${["debug", "info", "warn", "error"].map((l) =>
            html`<option>${l}</option>`
          )}
        </select><//>
        <button type="button" class="secondary" onClick=${logs.reload}>Refresh</button>
      </div>
      <${ErrorBox} error=${logs.error} />
      <${Table} caption="Logs" rows=${rows} empty="No log lines" columns=${[
        { key: "timestamp", label: "Time" },
        { key: "level", label: "Level" },
        { key: "message", label: "Message" },
      ]} />
      <${Pager} offset=${offset} limit=${50} count=${rows.length} onChange=${setOffset} />
  `;
}

const WINDOWS = ["1h", "24h", "7d", "30d"];

function Stats({ name }) {
  const stats = useLoad(
    () =>
      Promise.all(WINDOWS.map((w) => api(`/v1/functions/${encodeURIComponent(name)}/stats?window=${w}`)))
        .then((all) => all.map((r) => r.data)),
    [name],
  );
  if (stats.error) return html`<${ErrorBox} error=${stats.error} />`;
  if (!stats.data) return html`<p class="muted">Loading…</p>`;
  const day = stats.data[1];
  return html`
    <div class="charts">
      <${BarChart} title="Latency over the last 24 h" unit=" ms" bars=${[
        { label: "p50", value: day.p50_ms },
        { label: "p95", value: day.p95_ms },
        { label: "average", value: day.avg_ms },
      ]} />
      <${BarChart} title="Calls and failures by window" bars=${stats.data.flatMap((s) => [
        { label: `${s.window} calls`, value: s.count },
        { label: `${s.window} errors`, value: s.errors + s.timeouts + s.oom, tone: "bad" },
      ])} />
    </div>
    <${Table} caption="Stats by window" rows=${stats.data} columns=${[
      { key: "window", label: "Window" },
      { key: "count", label: "Calls" },
      { key: "errors", label: "Errors" },
      { key: "timeouts", label: "Timeouts" },
      { key: "oom", label: "Out of memory" },
      { key: "p50_ms", label: "p50 (ms)" },
      { key: "p95_ms", label: "p95 (ms)" },
    ]} />
    <button type="button" class="secondary" onClick=${stats.reload}>Refresh</button>
  `;
}
