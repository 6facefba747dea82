// The baseline: a bare Deno.serve answering BODY as JSON on PORT (0 picks one), printing "listening <port>".
// MODE=async answers from an async handler, which leaves Deno's synchronous fast path: the ceiling of any handler
// that awaits anything (a cache, a database, a middleware chain). MODE=floor does the least any authenticated
// route must do — read the URL, the host, apikey and authorization headers, and add an x-request-id — and
// nothing else: the ceiling of any real handler on this Deno.
const body = Deno.env.get("BODY") ?? '{"ok":true}';
const respond = () => new Response(body, { headers: { "content-type": "application/json" } });
const floor = (req: Request) => {
  const seen = req.url.length + (req.headers.get("host")?.length ?? 0) +
    (req.headers.get("apikey")?.length ?? 0) + (req.headers.get("authorization")?.length ?? 0);
  const res = respond();
  res.headers.set("x-request-id", crypto.randomUUID());
  return seen > 0 ? res : new Response(null, { status: 400 });
};
const mode = Deno.env.get("MODE") ?? (Deno.env.get("ASYNC") === "1" ? "async" : "sync");
Deno.serve(
  {
    port: Number(Deno.env.get("PORT") ?? 0),
    hostname: "127.0.0.1",
    onListen: ({ port }) => console.log(`listening ${port}`),
  },
  mode === "async" ? async () => await Promise.resolve(respond()) : mode === "floor" ? floor : respond,
);
