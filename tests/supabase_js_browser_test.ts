import { chromium } from "playwright-core";
import { assertEquals } from "./assert.ts";
import { bundleForBrowser } from "./client_bundle.ts";
import { servePlatform } from "./client_fixture.ts";
import { setUpSupabaseApp } from "./supabase_js_fixture.ts";

/** supabase-js (the pinned version) bundled for browsers. */
function bundleSupabaseJs(): Promise<string> {
  return bundleForBrowser(new URL("./fixtures/supabase_js_entry.ts", import.meta.url).pathname);
}

Deno.test("supabase-js in headless Chromium: sign-up, data under RLS, functions, from another origin", async () => {
  const code = await bundleSupabaseJs();
  const s = await servePlatform();
  // The page and the bundle come from another origin than the platform's, as a web app's would.
  const site = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/supabase.js") {
      return new Response(code, { headers: { "content-type": "text/javascript" } });
    }
    return new Response("<!doctype html><title>app</title>", { headers: { "content-type": "text/html" } });
  });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    await setUpSupabaseApp(s.p);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${site.addr.port}/`);
    const result = await page.evaluate(async ({ url, key }) => {
      const { createClient, FunctionsRelayError } = await import("/supabase.js");
      const supabase = createClient(url, key);
      const { data: up, error } = await supabase.auth.signUp({
        email: "browser@example.com",
        password: "plum-orchard-42",
      });
      if (error) return { error: String(error) };
      const inserted = await supabase.from("notes").insert({ body: "from the browser" }).select("body");
      const count = await supabase.rpc("my_note_count");
      const fn = await supabase.functions.invoke("echo", { body: { hi: 1 }, headers: { "x-custom": "b" } });
      const relay = await supabase.functions.invoke("nowhere");
      const stored = Object.keys(localStorage).filter((k) => k.includes("auth-token")).length;
      await supabase.auth.signOut();
      const afterSignOut = await supabase.from("notes").select("body");
      return {
        signedUp: up.user?.email,
        rows: inserted.data,
        count: count.data,
        fn: {
          user: fn.data?.user === up.user?.id,
          custom: fn.data?.custom,
          error: fn.error && String(fn.error),
        },
        relay: relay.error instanceof FunctionsRelayError,
        stored,
        afterSignOut: afterSignOut.data,
      };
    }, { url: s.url, key: s.p.publicKey });
    assertEquals(result, {
      signedUp: "browser@example.com",
      rows: [{ body: "from the browser" }],
      count: 1,
      fn: { user: true, custom: "b", error: null },
      relay: true,
      stored: 1,
      afterSignOut: [],
    });
    assertEquals(errors, []);
  } finally {
    await browser.close();
    await site.shutdown();
    await s.close();
  }
});
