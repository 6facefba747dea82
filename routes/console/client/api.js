/** The console's one way to the platform's JSON API, with the session cookie (same origin). */

/** The project the page shows (set by the server in `#app`). */
export const project = () => document.getElementById("app")?.dataset.project ?? "default";

/** An API failure: the envelope's message and code. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Calls `path` of the current project's API (`/v1/…`, `/rest/v1/…`) through `/console/api/{ref}`, or an
 * admin path (`/v1/admin/…`) as is. Resolves to `{ data, meta, headers, status }`; a 401 reloads the page,
 * which then shows the sign-in form.
 */
export async function api(path, { method = "GET", body, headers = {} } = {}) {
  const url = path.startsWith("/v1/admin/") ? path : `/console/api/${project()}${path}`;
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  if (res.status === 401) {
    location.reload();
    throw new ApiError(401, "UNAUTHORIZED", "Signed out");
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!res.ok) {
    const e = json?.error ?? json ?? {};
    throw new ApiError(res.status, e.code ?? String(res.status), e.message ?? res.statusText);
  }
  const enveloped = json && typeof json === "object" && "data" in json && !Array.isArray(json);
  return {
    data: enveloped ? json.data : json,
    meta: enveloped ? json.meta : null,
    headers: res.headers,
    status: res.status,
  };
}

/** Query string of the defined entries of `params`. */
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}
