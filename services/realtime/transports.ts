import type { Project } from "../projects/projects.ts";
import type { Connection, Credentials, Protocol } from "./types.ts";
import { CLOSE, type RealtimeService, type SseSubscription } from "./service.ts";

const encoder = new TextEncoder();

/** Client frames that may wait for the ones before them to be handled. */
export const MAX_WAITING_FRAMES = 256;

/**
 * Runs a realtime protocol over a server-side WebSocket that `Deno.upgradeWebSocket` returned: the platform's
 * own by default, or the one `protocolOf` makes for the connection (the Phoenix channel protocol).
 */
export function serveWebSocket(
  service: RealtimeService,
  socket: WebSocket,
  project: Project,
  credentials: Credentials,
  protocolOf?: (conn: () => Connection) => Protocol,
): void {
  socket.binaryType = "arraybuffer";
  // deno-lint-ignore prefer-const
  let conn: Connection;
  const protocol = protocolOf ? protocolOf(() => conn) : service.jsonProtocol;
  conn = service.open(project, credentials, {
    send: (frame) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(frame);
    },
    bufferedAmount: () => socket.bufferedAmount,
    close: (code, reason) => {
      try {
        socket.close(code, reason);
      } catch { /* already closing */ }
    },
  }, protocol);
  // Frames are handled one after another, so that answers keep the order of the requests. Frames waiting
  // their turn (a client sending faster than its subscriptions resolve) are bounded like outgoing bytes.
  let queue = Promise.resolve();
  let waiting = 0;
  let waitingBytes = 0;
  socket.onmessage = (event) => {
    const data = event.data;
    const size = typeof data === "string"
      ? data.length
      : data instanceof Blob
      ? data.size
      : (data as ArrayBuffer).byteLength ?? 0;
    if (waiting >= MAX_WAITING_FRAMES || waitingBytes + size > service.options.maxBufferBytes) {
      service.fail(conn, CLOSE.slowConsumer, {
        code: "TOO_MANY_MESSAGES",
        message:
          `Connection dropped: more than ${MAX_WAITING_FRAMES} messages or ${service.options.maxBufferBytes} ` +
          "bytes sent before the earlier ones were answered",
      });
      return;
    }
    waiting++;
    waitingBytes += size;
    queue = queue.then(async () => {
      if (conn.closed) return;
      const frame = typeof data === "string"
        ? data
        : data instanceof Blob
        ? new Uint8Array(await data.arrayBuffer())
        : new Uint8Array(data as ArrayBuffer);
      await conn.protocol.receive(conn, frame);
    }).catch(() => {
      // receive() answers protocol errors itself; anything else must not stop the frames after this one.
    }).finally(() => {
      waiting--;
      waitingBytes -= size;
    });
  };
  socket.onclose = () => void service.closed(conn);
  socket.onerror = () => void service.closed(conn);
}

/** Options of {@linkcode serveSse}. */
export interface SseOptions {
  project: Project;
  credentials: Credentials;
  subscription: SseSubscription;
}

/**
 * Opens an SSE stream: `event: <type>` / `id: <n>` / `data: <json>` frames and a comment
 * heartbeat. The stream's queue is bounded in bytes: a reader that falls behind is dropped with an error frame.
 */
export async function serveSse(
  service: RealtimeService,
  options: SseOptions,
): Promise<ReadableStream<Uint8Array>> {
  const { maxBufferBytes, sseHeartbeatMs } = service.options;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let id = 0;
  // deno-lint-ignore prefer-const
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    void service.closed(conn);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel: end,
  }, new ByteLengthQueuingStrategy({ highWaterMark: maxBufferBytes }));
  const conn = service.open(options.project, options.credentials, {
    send: (text, kind) => {
      if (ended) return;
      controller.enqueue(encoder.encode(`event: ${kind}\nid: ${++id}\ndata: ${text}\n\n`));
    },
    bufferedAmount: () => maxBufferBytes - (controller.desiredSize ?? 0),
    close: () => {
      if (ended) return;
      end();
      try {
        controller.close();
      } catch { /* cancelled */ }
    },
  });
  try {
    await service.subscribeStream(conn, options.subscription);
  } catch (err) {
    end();
    throw err;
  }
  conn.sink.send(JSON.stringify({ type: "subscribed", channel: options.subscription.channel }), "subscribed");
  heartbeat = setInterval(() => {
    if (!ended && (controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(": heartbeat\n\n"));
  }, sseHeartbeatMs);
  return stream;
}
