import { chromium } from "playwright-core";
import { createClient } from "../client/mod.ts";
import { assertEquals, within } from "./assert.ts";
import { bundleClient } from "./client_bundle.ts";
import { servePlatform } from "./client_fixture.ts";

const SETUP =
  `create table public.messages (id bigserial primary key, body text, owner uuid default auth.uid());
alter table public.messages enable row level security;
create policy mine on public.messages for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
select realtime.enable('public.messages');`;

Deno.test("client in headless Chromium: sign-up, insert, realtime event round trip", async () => {
  const code = await bundleClient();
  const s = await servePlatform();
  // The page and the bundle come from another origin than the platform's, as a web app's would.
  const site = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/client.js") return new Response(code, { headers: { "content-type": "text/javascript" } });
    return new Response("<!doctype html><title>app</title>", { headers: { "content-type": "text/html" } });
  });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const admin = createClient(s.url, s.p.secretKey);
  try {
    await admin.sql(SETUP);
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${site.addr.port}/`);
    // A liveness bound, not a timing claim: an event that never comes fails here instead of hanging the suite.
    const result = await within(
      page.evaluate(async ({ url, key }) => {
        const { createClient } = await import("/client.js");
        const platform = createClient(url, key, { auth: { storage: "localStorage" } });
        await platform.auth.signUp({ email: "browser@example.com", password: "correct horse 1" });
        const event = new Promise((resolve, reject) => {
          platform.realtime.channel("mine")
            .on(
              "postgres_changes",
              { event: "INSERT", table: "messages" },
              (c: { record: unknown }) => resolve(c.record),
            )
            .subscribe()
            .then(() => platform.db.from("messages").insert({ body: "from the browser" }))
            .catch(reject);
        });
        const record = await event as { body: string };
        const stored = localStorage.length;
        const { data } = await platform.db.from("messages").select("body");
        platform.close();
        return { body: record.body, rows: data, stored };
      }, { url: s.url, key: s.p.publicKey }),
      120_000,
      "the page's sign-up, insert and realtime event",
    );
    assertEquals(result, { body: "from the browser", rows: [{ body: "from the browser" }], stored: 1 });
  } finally {
    await browser.close();
    admin.close();
    await site.shutdown();
    await s.close();
  }
});
