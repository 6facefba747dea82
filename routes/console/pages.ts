import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** The console's views, in the order of its navigation: path segment and label. */
export const VIEWS = [
  ["projects", "Projects"],
  ["functions", "Functions"],
  ["jobs", "Jobs"],
  ["cron", "Cron"],
  ["alerts", "Alerts"],
  ["notifications", "Notifications"],
  ["data", "Data"],
  ["users", "Auth users"],
  ["ai", "AI"],
] as const;

/** A view's path segment. */
export type View = typeof VIEWS[number][0];

type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/** The document around a page: every value interpolated by `html` is escaped. */
function documentOf(title: string, body: Page, bodyClass: string): Page {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>${title} · Platform console</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <link rel="icon" href="data:,">
      </head>
      <body class="${bodyClass}">${body}</body>
    </html>
  `;
}

/** Options of {@linkcode signInPage}. */
export interface SignInOptions {
  /** The address typed, kept in the form after a failure. */
  email?: string;
  /** What went wrong, shown above the form. */
  error?: string;
  /** Where to go once signed in (a console path). */
  next?: string;
}

/** The sign-in form: what every console page shows without a session. Nothing project-related is in it. */
export function signInPage(options: SignInOptions = {}): Page {
  const error = options.error
    ? html`<p class="error" role="alert" id="signin-error">${options.error}</p>`
    : "";
  return documentOf(
    "Sign in",
    html`
      <main class="signin">
        <h1>Platform console</h1>
        <form method="post" action="/console/login" aria-describedby="${options.error ? "signin-error" : ""}">
      ${error}
      <label for="email">Admin email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value="${options.email ??
        ""}">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required${options
          .error
        ? " autofocus"
        : ""}>
      <input type="hidden" name="next" value="${options.next ?? "/console"}">
      <button type="submit">Sign in</button>
        </form>
      </main>
    `,
    "signin-body",
  );
}

/** Options of {@linkcode consolePage}. */
export interface ConsoleOptions {
  view: View;
  /** The admin signed in. */
  email: string;
  /** Every project's ref and name, for the project picker. */
  projects: { ref: string; name: string }[];
  /** The project the view shows. */
  project: string;
}

/**
 * A signed-in page: the navigation, the project picker and sign-out rendered here; the view's content is
 * rendered by the light client into `#app`, from the platform's JSON API (`/console/api/{ref}/…`).
 */
export function consolePage(options: ConsoleOptions): Page {
  const { view, project } = options;
  const label = VIEWS.find(([v]) => v === view)![1];
  const q = `?project=${encodeURIComponent(project)}`;
  const nav = VIEWS.map(([v, text]) =>
    html`<li><a href="/console/${v}${q}"${
      v === view
        ? html`
          aria-current="page"
        `
        : ""
    }>${text}</a></li>`
  );
  const options_ = options.projects.map((p) =>
    html`
      <option value="${p.ref}" ${p.ref === project ? " selected" : ""}>${p.name} (${p.ref})</option>
    `
  );
  return documentOf(
    label,
    html`
      <header class="top">
        <a class="brand" href="/console/projects${q}">Platform console</a>
        <form class="picker" method="get" action="/console/${view}" id="project-picker">
          <label for="project-select">Project</label>
          <select id="project-select" name="project">${options_}</select>
          <button type="submit" class="secondary">Open</button>
        </form>
        <form class="signout" method="post" action="/console/logout">
          <span class="who">${options.email}</span>
          <button type="submit" class="secondary">Sign out</button>
        </form>
      </header>
      <nav class="views" aria-label="Views">
        <ul>${nav}</ul>
      </nav>
      <main id="app" data-view="${view}" data-project="${project}" tabindex="-1">
        <h1>${label}</h1>
        <noscript><p>The console needs JavaScript for this view.</p></noscript>
        <p class="muted">Loading…</p>
      </main>
      <script type="module" src="/console/assets/console.js"></script>
    `,
    `view-${view}`,
  );
}
