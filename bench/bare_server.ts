// The baseline: a bare Deno.serve answering BODY as JSON on PORT (0 picks one), printing "listening <port>".
// ASYNC=1 answers from an async handler, which leaves Deno's synchronous fast path: the ceiling of any handler
// that awaits anything (a cache, a database, a middleware chain).
const body = Deno.env.get("BODY") ?? '{"ok":true}';
const respond = () => new Response(body, { headers: { "content-type": "application/json" } });
Deno.serve({
  port: Number(Deno.env.get("PORT") ?? 0),
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, Deno.env.get("ASYNC") === "1" ? async () => await Promise.resolve(respond()) : respond);
