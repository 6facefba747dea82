/** Auth users: the project's users, paged and searchable, read through the owner's SQL (/v1/sql); no hash. */
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { ErrorBox, Field, formValues, html, Pager, Table, useLoad } from "../ui.js";

const PAGE = 25;
const QUERY = "select id, email, user_metadata, created_at, updated_at from auth.users " +
  "where $1 = '' or email ilike '%' || $1 || '%' order by created_at desc limit $2 offset $3";

export function UsersView() {
  const [search, setSearch] = useState("");
  const [offset, setOffset] = useState(0);
  const users = useLoad(
    () =>
      api("/v1/sql", { method: "POST", body: { query: QUERY, params: [search, PAGE, offset] } }).then((r) =>
        r.data
      ),
    [search, offset],
  );
  const rows = users.data ?? [];
  return html`
    <form class="inline" onSubmit=${(e) => (setOffset(0), setSearch(formValues(e).search))}
      aria-label="Search users">
      <${Field} id="u-search" label="Email contains"><input id="u-search" name="search" /><//>
        <button type="submit">Search</button>
      </form>
      <${ErrorBox} error=${users.error} />
      <${Table} caption="Users" rows=${rows} empty="No users" columns=${[
        { key: "email", label: "Email" },
        { key: "id", label: "Id" },
        { key: "user_metadata", label: "Metadata" },
        { key: "created_at", label: "Signed up" },
      ]} />
      <${Pager} offset=${offset} limit=${PAGE} count=${rows.length} onChange=${setOffset} />
  `;
}
