import type { Project } from "../projects/projects.ts";
import type { Connection, Credentials, Frame, Protocol, Sink } from "./types.ts";
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
  conn = service.open(project, credentials, new WebSocketSink(socket), protocol);
  // One listener object for both events, and no onerror: "close" always follows "error". Each `on…` handler
  // would cost a wrapper closure and a listener record per connection, kept as long as the socket is open.
  const session = new WebSocketSession(service, conn);
  socket.addEventListener("message", session);
  socket.addEventListener("close", session);
}

/** A WebSocket as a connection's sink: methods on a prototype rather than closures per connection. */
class WebSocketSink implements Sink {
  constructor(private readonly socket: WebSocket) {}
  send(frame: Frame): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(frame);
  }
  bufferedAmount(): number {
    return this.socket.bufferedAmount;
  }
  close(code: number, reason: string): void {
    try {
      this.socket.close(code, reason);
    } catch { /* already closing */ }
  }
}

/**
 * The client side of one WebSocket connection. Frames are handled one after another, so that answers keep the
 * order of the requests. Frames waiting their turn (a client sending faster than its subscriptions resolve) are
 * bounded like outgoing bytes. The queue exists only while frames wait.
 */
class WebSocketSession {
  private queue: Promise<void> | null = null;
  private waiting = 0;
  private waitingBytes = 0;
  constructor(private readonly service: RealtimeService, private readonly conn: Connection) {}

  handleEvent(event: Event): void {
    if (event.type === "message") this.received((event as MessageEvent).data);
    else void this.service.closed(this.conn);
  }

  private received(data: unknown): void {
    const { service, conn } = this;
    const size = typeof data === "string"
      ? data.length
      : data instanceof Blob
      ? data.size
      : (data as ArrayBuffer).byteLength ?? 0;
    if (this.waiting >= MAX_WAITING_FRAMES || this.waitingBytes + size > service.options.maxBufferBytes) {
      service.fail(conn, CLOSE.slowConsumer, {
        code: "TOO_MANY_MESSAGES",
        message:
          `Connection dropped: more than ${MAX_WAITING_FRAMES} messages or ${service.options.maxBufferBytes} ` +
          "bytes sent before the earlier ones were answered",
      });
      return;
    }
    this.waiting++;
    this.waitingBytes += size;
    const queue = (this.queue ?? Promise.resolve()).then(async () => {
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
      this.waiting--;
      this.waitingBytes -= size;
      if (this.queue === queue) this.queue = null;
    });
    this.queue = queue;
  }
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
