/** The console's light client: renders the view the server named in `#app` (docs/console.md). */
import { render } from "preact";
import { html } from "./ui.js";
import { ProjectsView } from "./views/projects.js";
import { FunctionsView } from "./views/functions.js";
import { JobsView } from "./views/jobs.js";
import { DataView } from "./views/data.js";
import { NotificationsView } from "./views/notifications.js";
import { CronView } from "./views/cron.js";
import { AlertsView } from "./views/alerts.js";
import { UsersView } from "./views/users.js";
import { AiView } from "./views/ai.js";

const VIEWS = {
  projects: ProjectsView,
  functions: FunctionsView,
  jobs: JobsView,
  data: DataView,
  notifications: NotificationsView,
  cron: CronView,
  alerts: AlertsView,
  users: UsersView,
  ai: AiView,
};

const app = document.getElementById("app");
if (app) {
  const View = VIEWS[app.dataset.view];
  const title = app.querySelector("h1")?.textContent ?? "";
  app.textContent = ""; // the server's placeholder
  render(html`<h1>${title}</h1>${View ? html`<${View} />` : html`<p>Not built yet</p>`}`, app);
}

// The project picker opens the chosen project at once (the Open button does the same without script).
const picker = document.getElementById("project-select");
picker?.addEventListener("change", () => picker.form?.requestSubmit());
