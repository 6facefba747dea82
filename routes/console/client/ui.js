/** Shared pieces of the console's views: Preact components written with htm (no build step for the source). */
import { h } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import htm from "htm";

/** JSX-like templates; every interpolated value is text, never markup (Preact escapes it). */
export const html = htm.bind(h);

/** Runs `load` now and on every change of `deps`: `{ data, error, loading, reload }`. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const run = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => setState({ data, error: null, loading: false }),
      (error) => setState({ data: null, error, loading: false }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** A failure, announced to screen readers. */
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message ?? String(error)}</p>`;
}

/** A labelled input, select or textarea: `children` is the control, whose id is `id`. */
export function Field({ id, label, children, hint }) {
  return html`<div class="field"><label for=${id}>${label}</label>${children}${
    hint ? html`<small class="muted">${hint}</small>` : null
  }</div>`;
}

/** Previous / next over a list read by `limit` and `offset`; `count` is the length of the page shown. */
export function Pager({ offset, limit, count, onChange, label = "Pages" }) {
  return html`
    <nav class="pager" aria-label=${label}>
      <button type="button" class="secondary" disabled=${offset === 0}
        onClick=${() => onChange(Math.max(0, offset - limit))}>Previous</button>
      <span>${count === 0 ? "No rows" : `Rows ${offset + 1}–${offset + count}`}</span>
      <button type="button" class="secondary" disabled=${count < limit}
        onClick=${() => onChange(offset + limit)}>Next</button>
    </nav>
  `;
}

/** A table; `columns`: `{ key, label, render? }`; the cells are text unless `render` returns elements. */
export function Table({ columns, rows, caption, empty = "Nothing yet" }) {
  if (!rows || rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`
    <div class="table-wrap" tabindex="0" role="region" aria-label=${caption ?? "Table"}>
      <table>${caption ? html`<caption>${caption}</caption>` : null}
        <thead><tr>${columns.map((c) => html`<th scope="col">${c.label}</th>`)}</tr></thead>
        <tbody>${rows.map((row, i) =>
          html`<tr key=${row.id ?? i}>${
            columns.map((c) => html`<td>${c.render ? c.render(row) : cellText(row[c.key])}</td>`)
          }</tr>`
        )}</tbody>
      </table>
    </div>
  `;
}

/** A value as table text: JSON for objects, "—" for null. */
export function cellText(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** Pretty JSON in a block. */
export function Json({ value, label }) {
  return html`<pre class="json" aria-label=${label}>${
    typeof value === "string" ? value : JSON.stringify(value, null, 2)
  }</pre>`;
}

/** Asks before a destructive action: runs `act` only when the operator confirms. */
export function confirmed(message, act) {
  return () => {
    if (globalThis.confirm(message)) act();
  };
}

/**
 * A bar chart in SVG, drawn here (no chart library): `bars` is `[{ label, value, tone? }]`; the values are
 * also given as text, so the chart reads without sight.
 */
export function BarChart({ title, bars, unit = "" }) {
  const width = 360, barH = 22, gap = 8, labelW = 110;
  const max = Math.max(1, ...bars.map((b) => Number(b.value) || 0));
  const height = bars.length * (barH + gap) + gap;
  return html`
    <figure class="chart">
      <figcaption>${title}</figcaption>
      <svg viewBox=${`0 0 ${width} ${height}`} role="img" aria-label=${title}>
          ${bars.map((b, i) => {
            const y = gap + i * (barH + gap);
            const w = ((Number(b.value) || 0) / max) * (width - labelW - 70);
            return html`
              <g key=${b.label}>
                <text x="0" y=${y + 15} class="chart-label">${b.label}</text>
                <rect x=${labelW} y=${y} width=${Math.max(1, w)} height=${barH} rx="3" class=${`bar ${
                  b.tone ?? ""
                }`}></rect>
                <text x=${labelW + w + 6} y=${y +
                  15} class="chart-value">${b.value === null || b.value === undefined
                  ? "—"
                  : `${round(b.value)}${unit}`}</text>
              </g>
            `;
          })}
        </svg>
    </figure>
  `;
}

const round = (v) => Math.round(Number(v) * 100) / 100;

/** Tabs with keyboard support (arrow keys move, as the ARIA pattern asks). */
export function Tabs({ tabs, current, onChange, label }) {
  const onKey = (e) => {
    const i = tabs.findIndex(([id]) => id === current);
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    const next = tabs[(i + step + tabs.length) % tabs.length][0];
    onChange(next);
    requestAnimationFrame(() => document.getElementById(`tab-${next}`)?.focus());
  };
  return html`<div role="tablist" aria-label=${label} class="tabs" onKeyDown=${onKey}>${
    tabs.map(([id, text]) =>
      html`
        <button type="button" role="tab" id=${`tab-${id}`} aria-selected=${id === current}
          tabindex=${id === current ? 0 : -1} onClick=${() => onChange(id)}>${text}</button>
      `
    )
  }</div>`;
}

/** Reads a form's fields by name. */
export function formValues(e) {
  e.preventDefault();
  return Object.fromEntries(new FormData(e.currentTarget).entries());
}

/** Parses a JSON field, with the field's name in the error. */
export function parseJson(text, name) {
  if (!text || !text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${name} is not valid JSON`);
  }
}
