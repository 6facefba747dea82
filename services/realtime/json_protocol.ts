import type { BroadcastEncoder, BroadcastEvent, ServerEvent } from "./types.ts";

/** The platform's own protocol's broadcasts (one encoder for all its connections; null for raw bytes). */
export const jsonBroadcasts: BroadcastEncoder = {
  key: "json",
  encode: (event: BroadcastEvent) =>
    event.payload instanceof Uint8Array ? null : JSON.stringify({
      type: "event",
      channel: event.channel,
      event: "broadcast",
      payload: { event: event.event, payload: event.payload },
    }),
};

/**
 * Encodes a change or a presence as the platform's own protocol (docs/realtime.md): one JSON text, computed once
 * per event whatever the number of connections it goes to. Broadcasts are {@linkcode jsonBroadcasts}'.
 */
export function encodeJson(event: Exclude<ServerEvent, BroadcastEvent>): string {
  let text = event.cache.get("json") as string | undefined;
  if (text !== undefined) return text;
  switch (event.kind) {
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
