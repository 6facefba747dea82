/**
 * A webhook receiver for bench/notifications.ts, in its own process: POST counts, GET reads the count, GET
 * /dupes how many POSTs repeated a `webhook-id` already received, DELETE resets.
 */
let received = 0;
const seen = new Set<string>();
let dupes = 0;
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(port),
}, async (req) => {
  if (req.method === "GET") {
    return new Response(String(new URL(req.url).pathname === "/dupes" ? dupes : received));
  }
  if (req.method === "DELETE") {
    received = 0;
    dupes = 0;
    seen.clear();
    return new Response("0");
  }
  await req.arrayBuffer();
  received++;
  const id = req.headers.get("webhook-id");
  if (id) {
    if (seen.has(id)) dupes++;
    else seen.add(id);
  }
  return new Response("ok");
});
await server.finished;
