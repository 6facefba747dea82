import { json, type TestPlatform } from "./harness.ts";

/** A table of notes each user sees only its own of, and a function that counts them as the caller. */
export const SUPABASE_SETUP = `
create table public.notes (id bigserial primary key, body text not null, owner uuid not null default auth.uid());
alter table public.notes enable row level security;
create policy own_notes on public.notes for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
create function public.my_note_count() returns bigint language sql stable as $$ select count(*) from public.notes $$;`;

/** Functions as Supabase Edge Functions are written: they get the caller's request and answer as they like. */
export const SUPABASE_FUNCTIONS: Record<string, string> = {
  // Echoes what it received: method, URL, the headers a test looks at, the body as base64.
  echo: `export default async (req) => {
    const bytes = new Uint8Array(await req.arrayBuffer());
    let b = ""; for (const x of bytes) b += String.fromCharCode(x);
    const user = req.headers.get("x-platform-user");
    return Response.json({
      method: req.method, url: req.url, type: req.headers.get("content-type"),
      custom: req.headers.get("x-custom"), apikey: req.headers.get("apikey"),
      authorization: req.headers.get("authorization"), cookie: req.headers.get("cookie"),
      user: user ? JSON.parse(user).sub : null, body: btoa(b),
    });
  };`,
  text:
    `export default async (req) => new Response("hello " + await req.text(), { headers: { "content-type": "text/plain" } });`,
  bytes: `export default async (req) => {
    const bytes = new Uint8Array(await req.arrayBuffer());
    return new Response(bytes.map((b) => 255 - b), { headers: { "content-type": "application/octet-stream" } });
  };`,
  stream: `export default () => {
    let i = 0;
    const body = new ReadableStream({ pull(c) { if (i < 3) c.enqueue(new TextEncoder().encode("data: " + i++ + "\\n\\n")); else c.close(); } });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };`,
  teapot:
    `export default () => Response.json({ error: "short and stout" }, { status: 418, headers: { "x-why": "tea" } });`,
};

/** Creates the notes table and deploys the functions with the secret key. */
export async function setUpSupabaseApp(p: TestPlatform): Promise<void> {
  const sql = await json(
    await p.fetch("/v1/sql", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { query: SUPABASE_SETUP },
    }),
  );
  if (sql.status !== 200) throw new Error(`setup failed: ${JSON.stringify(sql.body)}`);
  for (const [name, code] of Object.entries(SUPABASE_FUNCTIONS)) {
    const res = await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "deno", code },
      }),
    );
    if (res.status >= 300) throw new Error(`deploy ${name} failed: ${JSON.stringify(res.body)}`);
  }
}
