/** A webhook receiver for bench/notifications.ts, in its own process: POST counts, GET /count reads, DELETE resets. */
let received = 0;
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(port),
}, async (req) => {
  if (req.method === "GET") return new Response(String(received));
  if (req.method === "DELETE") {
    received = 0;
    return new Response("0");
  }
  await req.arrayBuffer();
  received++;
  return new Response("ok");
});
await server.finished;
