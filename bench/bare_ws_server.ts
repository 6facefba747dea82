// The realtime baseline: a bare Deno.serve WebSocket hub with the same JSON shapes and no auth, RLS or limits.
// `{type: "subscribe", channel}` joins a channel; `{type: "broadcast", channel, event, payload}` goes to every
// other member. Prints "listening <port>".
const channels = new Map<string, Set<WebSocket>>();
Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) => console.log(`listening ${port}`),
}, (req) => {
  const { socket, response } = Deno.upgradeWebSocket(req);
  const joined = new Set<string>();
  socket.onmessage = (e) => {
    const m = JSON.parse(e.data as string);
    if (m.type === "subscribe") {
      let set = channels.get(m.channel);
      if (!set) channels.set(m.channel, set = new Set());
      set.add(socket);
      joined.add(m.channel);
      socket.send(JSON.stringify({ type: "subscribed", ref: m.ref, channel: m.channel }));
    } else if (m.type === "broadcast") {
      const text = JSON.stringify({
        type: "event",
        channel: m.channel,
        event: "broadcast",
        payload: { event: m.event, payload: m.payload },
      });
      for (const s of channels.get(m.channel) ?? []) if (s !== socket) s.send(text);
    }
  };
  socket.onclose = () => {
    for (const c of joined) channels.get(c)?.delete(socket);
  };
  return response;
});
