/**
 * What a project serves on the platform's origin cannot act as the console. A function's raw answer and a data
 * answer typed by the project's SQL are HTML here, opened in Chromium (playwright-core) by a signed-in admin:
 * their scripts run, but sandboxed in an opaque origin, so neither can read the admin API or write through it
 * with the admin's session cookie, which a script of the console's own origin can.
 */
import { chromium } from "playwright-core";
import { serve } from "../lib/serve.ts";
import { assert, assertEquals } from "./assert.ts";
import { ADMIN, startPlatform } from "./harness.ts";

const CHROMIUM = "/usr/bin/chromium";

/** Reads the admin API, then tries to create a project through it; says what happened in the title. */
const ATTACK = `<!doctype html><title>start</title><script>
(async () => {
  const read = await fetch("/v1/admin/projects", { credentials: "include" })
    .then((r) => "status " + r.status, (e) => "refused " + e);
  const write = await fetch("/v1/admin/projects", {
    method: "POST", credentials: "include", headers: { "content-type": "text/plain" },
    body: JSON.stringify({ ref: "stolen", name: "stolen" }),
  }).then((r) => "status " + r.status, (e) => "refused " + e);
  document.title = "ran; read " + read + "; write " + write;
})();
</script>`;

Deno.test({
  name: "tenant content: a function's HTML and an SQL-typed data answer run sandboxed, away from the console",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const p = await startPlatform({}, { workers: false });
    const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
    const base = `http://127.0.0.1:${server.addr.port}`;
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox"],
      headless: true,
    });
    try {
      const service = { apikey: p.secretKey, "content-type": "application/json" };
      const deployed = await fetch(`${base}/v1/functions`, {
        method: "POST",
        headers: service,
        body: JSON.stringify({
          name: "page",
          runtime: "deno",
          code: `export default () => new Response(${JSON.stringify(ATTACK)}, {
            headers: { "content-type": "text/html; charset=utf-8" },
          });`,
        }),
      });
      assert(deployed.ok, await deployed.text());
      const sql = await fetch(`${base}/v1/sql`, {
        method: "POST",
        headers: service,
        body: JSON.stringify({
          query: `create domain "text/html" as text;
            create function public.page(apikey text default null) returns "text/html" language sql as $$ select ${`$html$${ATTACK}$html$`}::"text/html" $$;
            grant execute on function public.page(text) to anon;
            notify pgrst, 'reload schema';`,
        }),
      });
      assert(sql.ok, await sql.text());

      const login = await fetch(`${base}/v1/admin/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(ADMIN),
      });
      const token = (await login.json()).data.token as string;
      const context = await browser.newContext();
      await context.addCookies([
        { name: "console_session", value: token, url: base, httpOnly: true, sameSite: "Strict" },
      ]);
      const page = await context.newPage();

      // The cookie is a real admin session: a script of the console's origin reads the admin API with it.
      await page.goto(`${base}/console`);
      assertEquals(
        await page.evaluate(() => fetch("/v1/admin/projects").then((r) => r.status)),
        200,
      );

      // A browser sends no headers of its own: the key rides in the query, which the function takes as an argument.
      const pages = [
        { what: "function", url: `${base}/functions/v1/page` },
        { what: "data", url: `${base}/rest/v1/rpc/page?apikey=${p.publicKey}` },
      ];
      for (const { what, url } of pages) {
        const res = await page.goto(url);
        assertEquals(res?.status(), 200, `${what}: ${await res?.text()}`);
        assert((await res!.headerValue("content-type"))?.startsWith("text/html"), what);
        await page.waitForFunction('document.title.startsWith("ran")');
        const title = await page.title();
        assert(!title.includes("status 200") && !title.includes("status 201"), `${what}: ${title}`);
      }
      const projects = await fetch(`${base}/v1/admin/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert(!(await projects.text()).includes("stolen"), "no project was created by the pages");
    } finally {
      await browser.close();
      await server.shutdown();
      await p.close();
    }
  },
});
