/**
 * The console in a real browser: Debian's Chromium driven by playwright-core, headless, against a platform
 * served on a real socket. Walks an operator's tasks (sign-in with a wrong password first, a project, a
 * function deployed and invoked, a failing job into the DLQ and back, a template preview, a SQL query,
 * sign-out), saves a screenshot of each main view (the path is printed) and fails on any script error.
 */
import { chromium, type Page } from "playwright-core";
import { serve } from "../lib/serve.ts";
import { assert, assertEquals } from "./assert.ts";
import { ADMIN, startPlatform } from "./harness.ts";
import { FUNCTIONS } from "./jobs_fixtures.ts";

// Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it when missing).
const CHROMIUM = "/usr/bin/chromium";

Deno.test({
  name: "console in Chromium: an operator's tasks, screenshots, no script errors",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const p = await startPlatform({}, { workers: true });
    const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
    const base = `http://127.0.0.1:${server.addr.port}`;
    const shots = Deno.env.get("CONSOLE_SCREENSHOTS") ?? await Deno.makeTempDir({ prefix: "console-shots-" });
    await Deno.mkdir(shots, { recursive: true });
    console.log(`console screenshots: ${shots}`);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox"],
      headless: true,
    });
    const problems: string[] = [];
    let page: Page | undefined;
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await context.newPage();
      page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
      page.on("console", (msg) => {
        if (msg.type() === "error") problems.push(`console error: ${msg.text()}`);
      });
      page.on("dialog", (dialog) => dialog.accept());
      const shot = (name: string) => page!.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

      // The root leads to the console, which asks for a sign-in; no key is in that page.
      await page.goto(`${base}/`);
      assertEquals(new URL(page.url()).pathname, "/console");
      const before = await page.content();
      assert(!before.includes(p.publicKey) && !before.includes(p.secretKey));
      await shot("sign-in");

      // Sign in: a wrong password first keeps the form and says so.
      await page.getByLabel("Admin email").fill(ADMIN.email);
      await page.getByLabel("Password").fill("not-the-password");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("alert").filter({ hasText: "Wrong email or password" }).waitFor();
      assertEquals(await page.getByLabel("Admin email").inputValue(), ADMIN.email);
      await page.getByLabel("Password").fill(ADMIN.password);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor();

      // Projects: create one, reveal its keys.
      await page.getByLabel("Ref").fill("shop");
      await page.getByLabel("Name", { exact: true }).fill("Shop");
      await page.getByRole("button", { name: "Create project" }).click();
      await page.getByRole("heading", { name: "Keys of shop" }).waitFor();
      await page.getByRole("cell", { name: "shop", exact: true }).waitFor();
      await page.locator('#project-select option[value="shop"]').waitFor({ state: "attached" }); // picker too
      await shot("projects");

      // Functions: deploy from the editor, invoke from the panel.
      await page.goto(`${base}/console/functions?project=default`);
      await page.getByRole("button", { name: "New function" }).click();
      await page.getByLabel("Name").fill("hello");
      await page.getByRole("button", { name: "Deploy" }).click();
      await page.getByRole("tab", { name: "Invoke" }).waitFor();
      await page.getByLabel("Path").fill("/greet");
      await page.getByRole("button", { name: "Invoke", exact: true }).click();
      await page.getByTestId("invoke-status").filter({ hasText: "200" }).waitFor();
      await page.getByText('"hello": "world"').waitFor();
      await page.getByText("info: called GET /greet").waitFor(); // the call's console output
      await shot("functions");
      await page.getByRole("tab", { name: "Stats" }).click();
      await page.getByText("Latency over the last 24 h").waitFor();
      await shot("function-stats");

      // Jobs: a job of a failing function lands in the dead-letter queue; requeue it.
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name: "broken", runtime: "deno", code: FUNCTIONS.broken },
      }).then((r) => r.body?.cancel());
      await page.goto(`${base}/console/jobs?project=default`);
      await page.getByText("Enqueue a job").click();
      await page.getByLabel("Function").fill("broken");
      await page.getByLabel("Max attempts").fill("1");
      await page.getByRole("button", { name: "Enqueue" }).click();
      await page.getByRole("status").filter({ hasText: "enqueued" }).waitFor();
      await page.getByRole("tab", { name: "Dead letters" }).click();
      const deadline = Date.now() + 30_000;
      while (!(await page.getByRole("cell", { name: "broken" }).count())) {
        assert(Date.now() < deadline, "the failing job never reached the dead-letter queue");
        await page.waitForTimeout(300);
        await page.getByRole("button", { name: "Refresh" }).click();
      }
      await shot("jobs-dlq");
      await page.getByRole("button", { name: "Requeue all dead jobs" }).click();
      await page.getByRole("status").filter({ hasText: "1 job(s) requeued" }).waitFor();

      // Notifications: a template and its live preview.
      await page.goto(`${base}/console/notifications?project=default`);
      await page.getByRole("tab", { name: "Templates" }).click();
      await page.getByText("New template").click();
      await page.getByLabel("Name").fill("welcome");
      await page.getByLabel("Subject").fill("Welcome {{ user.name }}");
      await page.getByLabel("Body", { exact: true }).fill("Hello {{ user.name }}, <b>not markup</b>");
      await page.getByRole("button", { name: "Create template" }).click();
      await page.getByLabel("Variables (JSON)").fill('{"user": {"name": "Ada"}}');
      await page.getByTestId("template-preview").filter({ hasText: "Hello Ada" }).waitFor();
      assertEquals(await page.locator("[data-testid=template-preview] b").count(), 0, "rendered as text");
      await shot("notifications");

      // Data: the SQL runner.
      await page.goto(`${base}/console/data?project=default`);
      await page.getByRole("tab", { name: "SQL runner" }).click();
      await page.getByLabel("SQL", { exact: true }).fill("select 41 + 1 as answer");
      await page.getByRole("button", { name: "Run" }).click();
      await page.getByRole("cell", { name: "42" }).waitFor();
      await shot("data-sql");

      // The other views render without errors.
      for (const view of ["cron", "alerts", "users", "ai"]) {
        await page.goto(`${base}/console/${view}?project=default`);
        await page.locator("#app h1").waitFor();
        await page.waitForLoadState("networkidle");
        await shot(view);
      }

      // Phone width.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${base}/console/functions?project=default`);
      await page.getByRole("button", { name: "New function" }).waitFor();
      await shot("functions-phone");
      await page.setViewportSize({ width: 1280, height: 800 });

      // Sign out: the console asks for a sign-in again.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("button", { name: "Sign in" }).waitFor();
      await page.goto(`${base}/console/projects`);
      await page.getByRole("button", { name: "Sign in" }).waitFor();
      assertEquals(problems, []);
      await context.close();
    } catch (err) {
      await page?.screenshot({ path: `${shots}/failure.png`, fullPage: true });
      if (problems.length) console.error(problems.join("\n"));
      throw err;
    } finally {
      await browser.close();
      await server.shutdown();
      await p.close();
    }
  },
});
