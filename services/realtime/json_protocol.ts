import type { ServerEvent } from "./types.ts";

/**
 * Encodes a hub event as the platform's own protocol (docs/realtime.md): one JSON text, computed once per
 * event whatever the number of connections it goes to. Null for a broadcast of raw bytes (sent by a
 * supabase-js client), which a JSON protocol cannot carry.
 */
export function encodeJson(event: ServerEvent): string | null {
  let text = event.cache.get("json") as string | undefined;
  if (text !== undefined) return text;
  switch (event.kind) {
    case "broadcast":
      if (event.payload instanceof Uint8Array) return null;
      text = JSON.stringify({
        type: "event",
        channel: event.channel,
        event: "broadcast",
        payload: { event: event.event, payload: event.payload },
      });
      break;
    case "presence_state":
      text = JSON.stringify({ type: "presence_state", channel: event.channel, state: event.state });
      break;
    case "postgres_changes":
      text = JSON.stringify({
        type: "event",
        channel: event.channel,
        event: "postgres_changes",
        payload: event.change,
      });
      break;
  }
  event.cache.set("json", text);
  return text;
}
