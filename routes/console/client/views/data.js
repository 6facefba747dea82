/** Data: the table browser (the data API, /rest/v1) and the SQL runner (/v1/sql). */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { ErrorBox, Field, formValues, html, Pager, Table, Tabs, useLoad } from "../ui.js";

const PAGE = 25;
const TABLES = "select table_schema || '.' || table_name as name from information_schema.tables " +
  "where table_schema = 'public' order by 1";

export function DataView() {
  const [tab, setTab] = useState("tables");
  return html`
    <${Tabs} label="Data" current=${tab} onChange=${setTab}
      tabs=${[["tables", "Table browser"], ["sql", "SQL runner"]]} />
      ${tab === "tables" ? html`<${Browser} />` : html`<${SqlRunner} />`}
  `;
}

function columnsOf(rows) {
  const keys = rows.length ? Object.keys(rows[0]) : [];
  return keys.map((k) => ({ key: k, label: k }));
}

function Browser() {
  const tables = useLoad(
    () => api("/v1/sql", { method: "POST", body: { query: TABLES } }).then((r) => r.data.map((t) => t.name)),
    [],
  );
  const [table, setTable] = useState("");
  const [filter, setFilter] = useState("");
  const [order, setOrder] = useState("");
  const [offset, setOffset] = useState(0);
  const rows = useLoad(async () => {
    if (!table) return null;
    const name = table.replace(/^public\./, "");
    const q = new URLSearchParams(filter);
    q.set("limit", String(PAGE));
    q.set("offset", String(offset));
    if (order) q.set("order", order);
    const res = await api(`/rest/v1/${encodeURIComponent(name)}?${q}`, {
      headers: { prefer: "count=exact" },
    });
    return { rows: res.data, range: res.headers.get("content-range") };
  }, [table, filter, order, offset]);
  const apply = (e) => {
    const v = formValues(e);
    setOffset(0);
    setTable(v.table);
    setFilter(v.filter);
    setOrder(v.order);
  };
  return html`
    <form class="inline" onSubmit=${apply} aria-label="Browse a table">
      <${Field} id="tb-table" label="Table"><select id="tb-table" name="table" required>
          <option value="">choose…</option>${(tables.data ?? []).map((t) => html`<option>${t}</option>`)}
        </select><//>
        <${Field} id="tb-filter" label="Filters" hint="The data API's: id=gt.10&name=like.*a*"><input id="tb-filter"
          name="filter" placeholder="id=gt.10" /><//>
        <${Field} id="tb-order" label="Order"><input id="tb-order" name="order" placeholder="id.desc" /><//>
        <button type="submit">Show rows</button>
      </form>
      <${ErrorBox} error=${tables.error || rows.error} />
      ${rows.data &&
        html`
          <p class="muted">${rows.data.range ? `Range ${rows.data.range}` : ""}</p>
          <${Table} caption=${table} rows=${rows.data.rows} columns=${columnsOf(
            rows.data.rows,
          )} empty="No rows" />
          <${Pager} offset=${offset} limit=${PAGE} count=${rows.data.rows.length} onChange=${setOffset} />
        `}
  `;
}

function SqlRunner() {
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [offset, setOffset] = useState(0);
  const run = (e) => {
    const v = formValues(e);
    const started = performance.now();
    api("/v1/sql", { method: "POST", body: { query: v.query } }).then(
      (r) => {
        setError(null);
        setOffset(0);
        setResult({ rows: r.data, ms: performance.now() - started });
      },
      (err) => {
        setResult(null);
        setError(err);
      },
    );
  };
  const onKey = (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") e.currentTarget.form.requestSubmit();
  };
  const rows = result ? result.rows.slice(offset, offset + PAGE) : [];
  return html`
    <form class="stack" onSubmit=${run} aria-label="SQL runner">
      <${Field} id="sql-query" label="SQL" hint="Runs as the project's owner; Ctrl+Enter runs">
          <textarea id="sql-query" name="query" rows="6" class="code" spellcheck="false" onKeyDown=${onKey}
            required>select now() as now, current_user as role</textarea><//>
        <button type="submit">Run</button>
      </form>
      <${ErrorBox} error=${error} />
      ${result &&
        html`
          <p class="muted" role="status">${result.rows.length} row(s) in ${Math.round(result.ms)} ms</p>
          <${Table} caption="Result" rows=${rows} columns=${columnsOf(
            result.rows,
          )} empty="No rows returned" />
          <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
        `}
  `;
}
