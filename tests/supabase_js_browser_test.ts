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

/** Rows each user owns, plus shared rows every signed-in user reads (the marker that both pages receive). */
const REALTIME_SETUP =
  `create table public.board (id bigserial primary key, body text not null, shared boolean not null default false,
  owner uuid not null default auth.uid());
alter table public.board enable row level security;
create policy read_board on public.board for select to authenticated using (owner = auth.uid() or shared);
create policy write_board on public.board for insert to authenticated with check (owner = auth.uid());
select realtime.enable('public.board');`;

/** What each page keeps on `globalThis.app`: its client, and the events its channels received. */
interface BrowserApp {
  // deno-lint-ignore no-explicit-any
  supabase: any;
  // deno-lint-ignore no-explicit-any
  room: any;
  user: string;
  rows: string[];
  waves: unknown[];
}

Deno.test("supabase-js in headless Chromium: realtime postgres_changes under RLS and broadcast between two pages", async () => {
  const code = await bundleSupabaseJs();
  const s = await servePlatform();
  const site = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (new URL(req.url).pathname === "/supabase.js") {
      return new Response(code, { headers: { "content-type": "text/javascript" } });
    }
    return new Response("<!doctype html><title>app</title>", { headers: { "content-type": "text/html" } });
  });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    const setup = await s.p.fetch("/v1/sql", {
      method: "POST",
      headers: { apikey: s.p.secretKey },
      json: { query: REALTIME_SETUP },
    });
    assertEquals(setup.status, 200, await setup.text());
    const errors: string[] = [];
    // Each page signs up its own user through supabase-js, then subscribes to the table and to a broadcast room.
    const open = async (email: string) => {
      const page = await browser.newPage();
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${site.addr.port}/`);
      const status = await page.evaluate(async ({ url, key, email }) => {
        const { createClient } = await import("/supabase.js");
        const supabase = createClient(url, key);
        const { data, error } = await supabase.auth.signUp({ email, password: "plum-orchard-42" });
        if (error) return String(error);
        // The session's token reaches realtime-js before the channels join.
        await supabase.realtime.setAuth();
        const app: BrowserApp = { supabase, room: null, user: data.user.id, rows: [], waves: [] };
        (globalThis as unknown as { app: BrowserApp }).app = app;
        const joined = (channel: { subscribe(cb: (status: string, err?: Error) => void): void }) =>
          new Promise<string>((resolve) =>
            channel.subscribe((status, err) => {
              if (status === "SUBSCRIBED") resolve(status);
              else resolve(`${status}: ${err?.message}`);
            })
          );
        const db = supabase.channel("board").on(
          "postgres_changes",
          { event: "INSERT", schema: "public", table: "board" },
          (p: { new: { body: string; owner: string } }) =>
            app.rows.push(`${p.new.body}${p.new.owner === app.user ? " (mine)" : ""}`),
        );
        app.room = supabase.channel("room").on(
          "broadcast",
          { event: "wave" },
          (m: { payload: unknown }) => app.waves.push(m.payload),
        );
        const statuses = await Promise.all([joined(db), joined(app.room)]);
        return statuses.every((x) => x === "SUBSCRIBED") ? "ready" : statuses.join(", ");
      }, { url: s.url, key: s.p.publicKey, email });
      assertEquals(status, "ready");
      return page;
    };
    const a = await open("page-a@example.com");
    const b = await open("page-b@example.com");
    const state = (page: typeof a) =>
      page.evaluate(() => {
        const app = (globalThis as unknown as { app: BrowserApp }).app;
        return { rows: app.rows, waves: app.waves };
      });
    const insert = (page: typeof a, row: { body: string; shared?: boolean }) =>
      page.evaluate(async (row) => {
        const app = (globalThis as unknown as { app: BrowserApp }).app;
        const { error } = await app.supabase.from("board").insert(row);
        return error && String(error);
      }, row);
    // Bounded polling for a page's events (no timing thresholds: each wait is for an event that must come).
    const until = (page: typeof a, what: "rows" | "waves", n: number) =>
      page.waitForFunction(
        ({ what, n }) => (globalThis as unknown as { app: BrowserApp }).app[what].length >= n,
        { what, n },
        { timeout: 10_000, polling: 20 },
      );

    // Page A inserts its own row: A receives it.
    assertEquals(await insert(a, { body: "a's row" }), null);
    await until(a, "rows", 1);
    // Then page B inserts a shared row both may read: changes reach subscribers in commit order, so once B has
    // the marker, A's earlier row would have come before it had RLS let it through.
    assertEquals(await insert(b, { body: "marker", shared: true }), null);
    await until(a, "rows", 2);
    await until(b, "rows", 1);

    // A broadcast from page A reaches page B (and is not echoed to A).
    const sent = await a.evaluate(() =>
      (globalThis as unknown as { app: BrowserApp }).app.room.send({
        type: "broadcast",
        event: "wave",
        payload: { from: "a" },
      })
    );
    assertEquals(sent, "ok");
    await until(b, "waves", 1);
    // B's answer is the marker for A: it arrives after anything A would have received.
    await b.evaluate(() =>
      (globalThis as unknown as { app: BrowserApp }).app.room.send({
        type: "broadcast",
        event: "wave",
        payload: { from: "b" },
      })
    );
    await until(a, "waves", 1);

    assertEquals(await state(a), { rows: ["a's row (mine)", "marker"], waves: [{ from: "b" }] });
    assertEquals(await state(b), { rows: ["marker (mine)"], waves: [{ from: "a" }] });
    for (const page of [a, b]) {
      await page.evaluate(() =>
        (globalThis as unknown as { app: BrowserApp }).app.supabase.removeAllChannels()
      );
    }
    assertEquals(errors, []);
  } finally {
    await browser.close();
    await site.shutdown();
    await s.close();
  }
});
