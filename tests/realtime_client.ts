import type { Json } from "./harness.ts";
import { within } from "./assert.ts";

/** A realtime WebSocket client for tests: it records every server message and waits for the ones asked for. */
export class WsClient {
  readonly messages: Json[] = [];
  closeEvent: CloseEvent | undefined;
  private waiters: { match: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];
  private readonly closed: Promise<CloseEvent>;
  private seen = 0;

  private constructor(readonly socket: WebSocket) {
    socket.onmessage = (e) => {
      const message = JSON.parse(e.data as string);
      this.messages.push(message);
      this.waiters = this.waiters.filter((w) => {
        if (!w.match(message)) return true;
        w.resolve(message);
        return false;
      });
    };
    this.closed = new Promise((resolve) => {
      socket.onclose = (e) => {
        this.closeEvent = e;
        resolve(e);
      };
    });
  }

  /** Connects to `url` and waits until the socket is open. */
  static async connect(url: string): Promise<WsClient> {
    const socket = new WebSocket(url);
    const client = new WsClient(socket);
    const opened = new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = (e) => reject(new Error(`WebSocket failed: ${(e as ErrorEvent).message ?? "error"}`));
    });
    // A liveness bound, not a timing claim: a handshake that never ends fails instead of hanging the suite.
    await within(opened, 30_000, `the WebSocket's opening: ${url}`).catch((err) => {
      socket.close();
      throw err;
    });
    return client;
  }

  /** Sends a message (an object is serialized). */
  send(message: unknown): void {
    this.socket.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The first message matching `match` not returned before, waiting up to `ms`. */
  next(match: (m: Json) => boolean, ms = 5000): Promise<Json> {
    const index = this.messages.findIndex((m, i) => i >= 0 && !this.taken.has(m) && match(m));
    if (index >= 0) {
      const found = this.messages[index];
      this.taken.add(found);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`No matching message in ${ms} ms; got ${JSON.stringify(this.messages.slice(-5))}`));
      }, ms);
      const done = (m: Json) => {
        clearTimeout(timer);
        this.taken.add(m);
        resolve(m);
      };
      this.waiters.push({ match, resolve: done });
    });
  }

  private readonly taken = new Set<Json>();

  /** Sends a message and waits for the answer of one of `types` that echoes its ref. */
  async request(message: Record<string, unknown>, types = ["subscribed", "error"]): Promise<Json> {
    const ref = `r${++this.seen}`;
    this.send({ ...message, ref });
    return await this.next((m) => m.ref === ref && types.includes(m.type));
  }

  /** Subscribes and asserts that the server answered `subscribed`. */
  async subscribe(message: Record<string, unknown>): Promise<void> {
    const answer = await this.request({ type: "subscribe", ...message });
    if (answer.type !== "subscribed") throw new Error(`Subscribe failed: ${JSON.stringify(answer)}`);
  }

  /** The change events of a channel received so far (not only the unread ones). */
  changes(channel: string): Json[] {
    return this.messages.filter((m) =>
      m.type === "event" && m.channel === channel && m.event === "postgres_changes"
    );
  }

  /** Waits for the socket to close. */
  waitClosed(ms = 10_000): Promise<CloseEvent> {
    return within(this.closed, ms, "the socket's close");
  }

  /** Closes the socket and waits for the close to finish. */
  async close(): Promise<void> {
    if (this.closeEvent) return;
    this.socket.close();
    await this.waitClosed();
  }
}

/**
 * A round trip through the server: a ping answered by a pong. Every message the server sent before the pong
 * on this socket has arrived when it resolves (one socket keeps its order).
 */
export async function roundTrip(client: WsClient): Promise<void> {
  await client.request({ type: "ping" }, ["pong"]);
}
