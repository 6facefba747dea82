/** AI: namespaces, ingest a document, search, cache hit ratio (/v1/ai). */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { BarChart, ErrorBox, Field, formValues, html, Pager, Table, useLoad } from "../ui.js";

const PAGE = 25;

export function AiView() {
  const namespaces = useLoad(() => api("/v1/ai/namespaces").then((r) => r.data), []);
  const usage = useLoad(() => api("/v1/ai/usage?days=30").then((r) => r.data), []);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const [hits, setHits] = useState(null);
  const ingest = (e) => {
    const v = formValues(e);
    const form = e.currentTarget;
    api("/v1/ai/rag/ingest", {
      method: "POST",
      body: { namespace: v.namespace, document: { ...(v.id ? { id: v.id } : {}), text: v.text } },
    }).then((r) => {
      setError(null);
      setNote(`Ingested: ${JSON.stringify(r.data)}`);
      form.reset();
      namespaces.reload();
    }, setError);
  };
  const search = (e) => {
    const v = formValues(e);
    api("/v1/ai/search", { method: "POST", body: { namespace: v.namespace, query: v.query } })
      .then((r) => (setError(null), setHits(r.data)), setError);
  };
  const rows = Array.isArray(usage.data) ? usage.data : (usage.data?.rows ?? []);
  const requests = rows.reduce((n, r) => n + Number(r.requests ?? 0), 0);
  const cached = rows.reduce((n, r) => n + Number(r.cache_hits ?? 0), 0);
  const ns = Array.isArray(namespaces.data) ? namespaces.data : [];
  const nsRows = ns.slice(offset, offset + PAGE).map((n) => (typeof n === "string" ? { name: n } : n));
  return html`
    <div class="charts">
      <${BarChart} title=${`Cache hit ratio, 30 days: ${
        requests ? Math.round((cached / requests) * 100) : 0
      }%`}
        bars=${[{ label: "requests", value: requests }, {
          label: "cache hits",
          value: cached,
          tone: "good",
        }]} />
    </div>
    <${ErrorBox} error=${usage.error || namespaces.error || error} />
    <h2>Namespaces</h2>
    <${Table} caption="Namespaces" rows=${nsRows} empty="No namespaces: ingest a document"
      columns=${Object.keys(nsRows[0] ?? { name: 1 }).map((k) => ({ key: k, label: k }))} />
    <${Pager} offset=${offset} limit=${PAGE} count=${nsRows.length} onChange=${setOffset} />
    <div class="split">
      <form class="stack" onSubmit=${ingest} aria-label="Ingest a document">
        <h2>Ingest a document</h2>
        <${Field} id="ai-ns" label="Namespace"><input id="ai-ns" name="namespace" required /><//>
          <${Field} id="ai-id" label="Document id (optional)"><input id="ai-id" name="id" /><//>
          <${Field} id="ai-text" label="Text"><textarea id="ai-text" name="text" rows="5" required></textarea><//>
          <button type="submit">Ingest</button>
          ${note && html`<p class="note" role="status">${note}</p>`}
        </form>
        <form class="stack" onSubmit=${search} aria-label="Search"><h2>Search</h2>
          <${Field} id="ai-sns" label="Namespace"><input id="ai-sns" name="namespace" required /><//>
          <${Field} id="ai-q" label="Query"><input id="ai-q" name="query" type="search" required /><//>
          <button type="submit">Search</button>
          ${hits && html`<${Table} caption="Results" rows=${hits} empty="No match" columns=${[
            { key: "score", label: "Score", render: (h) => Math.round(h.score * 1000) / 1000 },
            { key: "document_id", label: "Document" },
            { key: "text", label: "Text" },
          ]} />`}
        </form>
      </div>
  `;
}
