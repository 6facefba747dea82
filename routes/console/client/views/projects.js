/** Projects: list, create, delete, reveal and rotate keys (the admin API, /v1/admin/projects). */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { confirmed, ErrorBox, Field, formValues, html, Pager, Table, useLoad } from "../ui.js";

const PAGE = 20;

/** Keeps the server-rendered project picker in step with a project created or deleted here. */
function syncPicker(ref, name) {
  const picker = document.getElementById("project-select");
  if (!picker) return;
  const existing = [...picker.options].find((o) => o.value === ref);
  if (name === null) return existing?.remove();
  if (existing) return;
  const option = document.createElement("option");
  option.value = ref;
  option.textContent = `${name} (${ref})`; // text, never markup
  picker.append(option);
}

export function ProjectsView() {
  const list = useLoad(() => api("/v1/admin/projects").then((r) => r.data), []);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState(null);
  const [keys, setKeys] = useState({});
  const act = (fn) => fn().catch(setError);

  const create = (e) => {
    const v = formValues(e);
    const form = e.currentTarget;
    act(async () => {
      const { data } = await api("/v1/admin/projects", {
        method: "POST",
        body: { ref: v.ref, ...(v.name ? { name: v.name } : {}) },
      });
      setError(null);
      setKeys((k) => ({ ...k, [data.ref]: data }));
      syncPicker(data.ref, data.name ?? data.ref);
      form.reset();
      list.reload();
    });
  };
  const reveal = (ref) =>
    act(async () => {
      const { data } = await api(`/v1/admin/projects/${encodeURIComponent(ref)}`);
      setKeys((k) => ({ ...k, [ref]: data }));
    });
  const rotate = (ref, kind) =>
    confirmed(
      `Rotate the ${kind} key of "${ref}"? The old key stops working at once.`,
      () =>
        act(async () => {
          const { data } = await api(`/v1/admin/projects/${encodeURIComponent(ref)}/keys/rotate`, {
            method: "POST",
            body: { kind },
          });
          setKeys((k) => ({ ...k, [ref]: { ...k[ref], ...data } }));
        }),
    );
  const remove = (ref) =>
    confirmed(
      `Delete project "${ref}", its keys and its whole database? This cannot be undone.`,
      () =>
        act(async () => {
          await api(`/v1/admin/projects/${encodeURIComponent(ref)}`, { method: "DELETE" });
          syncPicker(ref, null);
          list.reload();
        }),
    );

  const rows = (list.data ?? []).slice(offset, offset + PAGE);
  return html`
    <section aria-labelledby="new-project">
      <h2 id="new-project">New project</h2>
      <form class="inline" onSubmit=${create}>
        <${Field} id="project-ref"
          label="Ref"><input id="project-ref" name="ref" required pattern="[a-z0-9\\-]{1,40}"
            placeholder="my-app" /><//>
          <${Field} id="project-name" label="Name"><input id="project-name" name="name" placeholder="My app" /><//>
          <button type="submit">Create project</button>
        </form>
      </section>
      <${ErrorBox} error=${error || list.error} />
      <section aria-labelledby="project-list">
        <h2 id="project-list">Projects</h2>
        <${Table} caption="Projects" rows=${rows} columns=${[
          { key: "ref", label: "Ref" },
          { key: "name", label: "Name" },
          { key: "api_url", label: "API URL" },
          { key: "created_at", label: "Created" },
          {
            key: "actions",
            label: "Actions",
            render: (p) =>
              html`
                <div class="actions">
                  <a href=${`/console/functions?project=${encodeURIComponent(p.ref)}`}>Open</a>
                  <button type="button" class="secondary" onClick=${() => reveal(p.ref)}>Reveal keys</button>
                  <button type="button" class="secondary" onClick=${rotate(
                    p.ref,
                    "public",
                  )}>Rotate public key</button>
                  <button type="button" class="secondary" onClick=${rotate(
                    p.ref,
                    "secret",
                  )}>Rotate secret key</button>
                  <button type="button" class="danger" onClick=${remove(p.ref)}>Delete</button>
                </div>
              `,
          },
        ]} />
        <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
      </section>
      ${Object.entries(keys).map(([ref, k]) =>
        html`
          <section class="keys" key=${ref} aria-label=${`Keys of ${ref}`}>
            <h3>Keys of ${ref}</h3>
            <dl>
              <dt>Public key (anon)</dt>
              <dd><code>${k.public_key}</code></dd>
              <dt>Secret key (service_role, servers only)</dt>
              <dd><code>${k.secret_key}</code></dd>
            </dl>
            <button type="button" class="secondary" onClick=${() =>
              setKeys((all) => {
                const { [ref]: _, ...rest } = all;
                return rest;
              })}>Hide keys</button>
          </section>
        `
      )}
  `;
}
