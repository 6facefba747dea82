import { errorFromResponse, PlatformError } from "./errors.ts";
import { type Http, pathOf } from "./http.ts";
import { readSse } from "./sse.ts";

/** What a channel listens to. */
export type RealtimeListen = "postgres_changes" | "broadcast" | "presence";
/** A `postgres_changes` filter: the table, the kind of change and an optional `column=op.value`. */
export interface ChangesFilter {
  event?: "INSERT" | "UPDATE" | "DELETE" | "*";
  schema?: string;
  table: string;
  filter?: string;
}
/** A row change as the platform sends it. */
export interface ChangePayload {
  schema: string;
  table: string;
  type: "INSERT" | "UPDATE" | "DELETE";
  commit_timestamp: string;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
}
/** A broadcast as received. */
export interface BroadcastPayload {
  event: string;
  payload: unknown;
}
/** Presence of a channel: every key with the metas of its members. */
export type PresenceState = Record<string, Record<string, unknown>[]>;

/** Options of the realtime part of `createClient`. */
export interface RealtimeOptions {
  /** `websocket` (default where WebSocket exists) or `sse` (receive only: changes and broadcasts). */
  transport?: "websocket" | "sse";
  /** Interval of the `ping` heartbeat; a missing `pong` by the next one reconnects (default 25000 ms). */
  heartbeatMs?: number;
  /** First and largest delay between reconnection attempts (defaults 250 and 10000 ms, doubling, jittered). */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

/** Options of a channel. */
export interface ChannelOptions {
  /** This member's presence key (required to `track`). */
  presence?: { key: string };
  /** `self`: receive your own broadcasts; `ack`: `send` waits for the platform's acknowledgement. */
  broadcast?: { self?: boolean; ack?: boolean };
}

type Message = { type: string; ref?: string; channel?: string; [k: string]: unknown };
interface Binding {
  type: RealtimeListen;
  filter: Record<string, unknown>;
  callback: (payload: never) => void;
}

/**
 * RealtimeClient keeps one connection to the platform's realtime protocol (JSON messages with a `type`) for
 * every channel: it pings, reconnects with backoff after any drop and subscribes its channels again, and sends
 * the auth session's renewed token. Where WebSocket is missing it falls back to Server-Sent Events.
 */
export class RealtimeClient {
  #channels = new Map<string, RealtimeChannel>();
  #socket: WebSocket | null = null;
  #open: Promise<void> | null = null;
  #pending = new Map<string, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  #refs = 0;
  #attempt = 0;
  #closed = false;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #awaitingPong = false;
  readonly options: Required<RealtimeOptions>;

  constructor(
    readonly http: Http,
    readonly projectRef: () => Promise<string>,
    options: RealtimeOptions = {},
  ) {
    this.options = {
      transport: options.transport ?? (typeof WebSocket === "undefined" ? "sse" : "websocket"),
      heartbeatMs: options.heartbeatMs ?? 25_000,
      reconnectMinMs: options.reconnectMinMs ?? 250,
      reconnectMaxMs: options.reconnectMaxMs ?? 10_000,
    };
  }

  /** The channel of that name (one object per name). */
  channel(name: string, options: ChannelOptions = {}): RealtimeChannel {
    let channel = this.#channels.get(name);
    if (!channel) {
      channel = new RealtimeChannel(this, name, options);
      this.#channels.set(name, channel);
    }
    return channel;
  }

  /** Whether the WebSocket is open. */
  get connected(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /** @internal Forgets a channel. */
  remove(channel: RealtimeChannel): void {
    this.#channels.delete(channel.name);
    if (this.#channels.size === 0) this.#disconnectSocket();
  }

  /** Sends a renewed user token on the open connection (the auth client calls it after a refresh). */
  async setAuth(token: string | null): Promise<void> {
    if (token && this.connected) await this.request({ type: "access_token", token });
  }

  /** Closes every channel and the connection, and stops reconnecting. */
  close(): void {
    this.#closed = true;
    for (const channel of this.#channels.values()) channel.stopSse();
    this.#channels.clear();
    this.#disconnectSocket();
  }

  /** @internal Sends a message and waits for the answer that echoes its ref. */
  async request(message: Message): Promise<Message> {
    await this.connect();
    const ref = `${++this.#refs}`;
    const answer = new Promise<Message>((resolve, reject) => this.#pending.set(ref, { resolve, reject }));
    this.#socket!.send(JSON.stringify({ ...message, ref }));
    return await answer;
  }

  /** @internal Sends a message that has no answer. */
  async post(message: Message): Promise<void> {
    await this.connect();
    this.#socket!.send(JSON.stringify(message));
  }

  /** @internal Opens the WebSocket when it is not open. */
  connect(): Promise<void> {
    if (this.#closed) return Promise.reject(closedError());
    if (this.#open) return this.#open;
    this.#open = this.#openSocket().catch((err) => {
      this.#open = null;
      throw err;
    });
    return this.#open;
  }

  async #openSocket(): Promise<void> {
    const url = new URL(this.http.url(pathOf("GET /v1/realtime/ws")));
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("apikey", this.http.config.key);
    const token = await this.http.config.accessToken().catch(() => null);
    if (token) url.searchParams.set("access_token", token);
    const socket = new WebSocket(url.toString());
    this.#socket = socket;
    try {
      await new Promise<void>((resolve, reject) => {
        socket.onopen = () => resolve();
        socket.onerror = () => reject(networkFailure("Realtime connection failed"));
        socket.onclose = () => reject(networkFailure("Realtime connection closed"));
      });
    } catch (err) {
      if (this.#socket === socket) this.#socket = null;
      throw err;
    }
    socket.onmessage = (e) => {
      if (socket === this.#socket) this.#onMessage(JSON.parse(String(e.data)));
    };
    socket.onerror = () => {};
    socket.onclose = () => {
      if (socket === this.#socket) this.#onDrop();
    };
    this.#attempt = 0;
    this.#awaitingPong = false;
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => this.#beat(socket), this.options.heartbeatMs);
  }

  #beat(socket: WebSocket): void {
    if (this.#awaitingPong) {
      socket.close(); // no pong since the last ping: the connection is gone
      return;
    }
    this.#awaitingPong = true;
    socket.send(JSON.stringify({ type: "ping" }));
  }

  #onMessage(message: Message): void {
    if (message.type === "pong") this.#awaitingPong = false;
    const waiter = message.ref === undefined ? undefined : this.#pending.get(String(message.ref));
    if (waiter) {
      this.#pending.delete(String(message.ref));
      if (message.type === "error") waiter.reject(realtimeError(message));
      else waiter.resolve(message);
      return;
    }
    const channel = message.channel === undefined ? undefined : this.#channels.get(message.channel);
    channel?.dispatch(message);
  }

  /** The connection dropped: fail what waits, then reconnect and subscribe the channels again. */
  #onDrop(): void {
    clearInterval(this.#heartbeat);
    this.#socket = null;
    this.#open = null;
    for (const waiter of this.#pending.values()) waiter.reject(networkFailure("Realtime connection lost"));
    this.#pending.clear();
    if (!this.#closed && this.#channels.size > 0) this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    clearTimeout(this.#retry);
    const base = Math.min(this.options.reconnectMaxMs, this.options.reconnectMinMs * 2 ** this.#attempt++);
    this.#retry = setTimeout(async () => {
      try {
        await this.connect();
      } catch {
        if (!this.#closed) this.#scheduleReconnect();
        return;
      }
      try {
        for (const channel of this.#channels.values()) await channel.rejoin();
      } catch {
        this.#socket?.close(); // start over: the drop handler reconnects
      }
    }, base / 2 + Math.random() * base / 2);
  }

  #disconnectSocket(): void {
    clearInterval(this.#heartbeat);
    clearTimeout(this.#retry);
    const socket = this.#socket;
    this.#socket = null;
    this.#open = null;
    socket?.close();
    for (const waiter of this.#pending.values()) waiter.reject(closedError());
    this.#pending.clear();
  }
}

/**
 * RealtimeChannel is one named channel: listen with `on`, then `subscribe`; `send` broadcasts, `track` and
 * `untrack` set this member's presence, `unsubscribe` leaves.
 */
export class RealtimeChannel {
  #bindings: Binding[] = [];
  #state: "closed" | "joining" | "joined" = "closed";
  #presence: Record<string, unknown> | null = null;
  #sse: AbortController | null = null;

  constructor(readonly client: RealtimeClient, readonly name: string, readonly options: ChannelOptions) {}

  /** Calls `callback` for row changes matching `filter`. */
  on(type: "postgres_changes", filter: ChangesFilter, callback: (payload: ChangePayload) => void): this;
  /** Calls `callback` for broadcasts of `filter.event` (every event without one). */
  on(type: "broadcast", filter: { event?: string }, callback: (payload: BroadcastPayload) => void): this;
  /** Calls `callback` with the channel's presence whenever it changes. */
  on(type: "presence", filter: { event?: "sync" }, callback: (state: PresenceState) => void): this;
  on(type: RealtimeListen, filter: object, callback: (payload: never) => void): this {
    this.#bindings.push({ type, filter: filter as Record<string, unknown>, callback });
    return this;
  }

  /** The channel's state. */
  get state(): "closed" | "joining" | "joined" {
    return this.#state;
  }

  /** Subscribes (resolves once the platform answered `subscribed`); throws a PlatformError it refuses. */
  async subscribe(): Promise<this> {
    this.#state = "joining";
    if (this.client.options.transport === "sse") {
      await this.#startSse();
    } else {
      await this.client.request(this.#subscribeMessage());
      if (this.#presence) await this.client.post(this.#presenceMessage(this.#presence));
    }
    this.#state = "joined";
    return this;
  }

  /** @internal Subscribes again after a reconnection. */
  async rejoin(): Promise<void> {
    if (this.#state !== "closed" && this.client.options.transport === "websocket") {
      this.#state = "joining";
      try {
        await this.client.request(this.#subscribeMessage());
      } catch (err) {
        // The platform refused it this time (a table disabled, a grant revoked): the channel is closed.
        if (!(err instanceof PlatformError) || err.type !== "realtime") throw err;
        this.#state = "closed";
        return;
      }
      if (this.#presence) await this.client.post(this.#presenceMessage(this.#presence));
      this.#state = "joined";
    }
  }

  /** Broadcasts `payload` as `event` to the channel's other subscribers. */
  async send(event: string, payload: unknown): Promise<void> {
    this.#needsSocket("send");
    const message = { type: "broadcast", channel: this.name, event, payload };
    // Without `ack` the platform answers nothing.
    if (this.options.broadcast?.ack) await this.client.request(message);
    else await this.client.post(message);
  }

  /** Sets this member's presence state (the channel needs a `presence.key`). */
  async track(state: Record<string, unknown>): Promise<void> {
    this.#needsSocket("track");
    this.#presence = state;
    // presence_update has no answer of its own: the presence_state every member gets is the answer.
    if (this.#state === "joined") await this.client.post(this.#presenceMessage(state));
  }

  /** Removes this member from the channel's presence (the platform has no leave message: it rejoins). */
  async untrack(): Promise<void> {
    this.#needsSocket("untrack");
    this.#presence = null;
    if (this.#state !== "joined") return;
    await this.client.request({ type: "unsubscribe", channel: this.name });
    await this.client.request(this.#subscribeMessage());
  }

  /** Leaves the channel. */
  async unsubscribe(): Promise<void> {
    const was = this.#state;
    this.#state = "closed";
    this.stopSse();
    if (was !== "closed" && this.client.options.transport === "websocket" && this.client.connected) {
      await this.client.request({ type: "unsubscribe", channel: this.name }).catch(() => {});
    }
    this.client.remove(this);
  }

  /** @internal Hands a server message of this channel to the listeners. */
  dispatch(message: Message): void {
    if (this.#state === "closed") return;
    if (message.type === "presence_state") {
      this.#emit("presence", message.state, () => true);
      return;
    }
    if (message.type !== "event") return;
    if (message.event === "postgres_changes") {
      const change = message.payload as ChangePayload;
      this.#emit(
        "postgres_changes",
        change,
        (f) =>
          f.table === change.table && (f.schema ?? "public") === change.schema &&
          (f.event === undefined || f.event === "*" || f.event === change.type),
      );
    } else if (message.event === "broadcast") {
      const broadcast = message.payload as BroadcastPayload;
      this.#emit("broadcast", broadcast, (f) => f.event === undefined || f.event === broadcast.event);
    }
  }

  /** @internal Stops the SSE streams of this channel. */
  stopSse(): void {
    this.#sse?.abort();
    this.#sse = null;
  }

  #emit(type: RealtimeListen, payload: unknown, matches: (filter: Record<string, unknown>) => boolean): void {
    for (const b of this.#bindings) {
      if (b.type === type && matches(b.filter)) {
        try {
          (b.callback as (p: unknown) => void)(payload);
        } catch { /* a listener's fault is its own */ }
      }
    }
  }

  #subscribeMessage(): Message {
    const changes = this.#bindings.filter((b) => b.type === "postgres_changes").map((b) => b.filter);
    const message: Message = { type: "subscribe", channel: this.name };
    if (changes.length > 0) message.postgres_changes = changes;
    if (this.options.presence) message.presence = this.options.presence;
    if (this.options.broadcast) message.broadcast = this.options.broadcast;
    return message;
  }

  #presenceMessage(state: Record<string, unknown>): Message {
    return { type: "presence_update", channel: this.name, state };
  }

  #needsSocket(operation: string): void {
    if (this.client.options.transport === "sse") {
      throw new PlatformError({
        code: "NOT_SUPPORTED",
        type: "invalid_request",
        message: `Cannot ${operation} over Server-Sent Events: they only receive`,
        status: 0,
      });
    }
  }

  /** SSE: one stream per table listened to and one for the channel's broadcasts, each reconnecting. */
  async #startSse(): Promise<void> {
    this.stopSse();
    const controller = new AbortController();
    this.#sse = controller;
    const ref = await this.client.projectRef();
    const streams: Record<string, string>[] = this.#bindings
      .filter((b) => b.type === "postgres_changes")
      .map((b) => {
        const f = b.filter as unknown as ChangesFilter;
        const query: Record<string, string> = {
          channel: `${ref}:${f.schema ? `${f.schema}.` : ""}${f.table}`,
        };
        if (f.event && f.event !== "*") query.event = f.event;
        if (f.filter) query.filter = f.filter;
        return query;
      });
    if (this.#bindings.some((b) => b.type === "broadcast")) streams.push({ channel: `${ref}:${this.name}` });
    const opened = streams.map((query) => this.#runSse(query, controller.signal));
    await Promise.all(opened);
  }

  /** Runs one SSE stream until aborted; resolves once it first answered `subscribed`. */
  #runSse(query: Record<string, string>, signal: AbortSignal): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    let first = true;
    const run = async (attempt: number): Promise<void> => {
      try {
        const token = await this.client.http.config.accessToken();
        const url = this.client.http.url(pathOf("GET /v1/realtime/sse"), {
          ...query,
          apikey: this.client.http.config.key,
          access_token: token ?? undefined,
        });
        const res = await this.client.http.config.fetch(url, {
          signal,
          headers: { accept: "text/event-stream" },
        });
        if (!res.ok || !res.body) throw await errorFromResponse(res);
        attempt = 0;
        for await (const frame of readSse(res.body)) {
          const message = JSON.parse(frame.data) as Message;
          if (message.type === "subscribed" && first) {
            first = false;
            resolve();
          } else this.dispatch({ ...message, channel: this.name });
        }
      } catch (err) {
        if (signal.aborted) return;
        if (first && err instanceof PlatformError && err.status >= 400 && err.status < 500) {
          reject(err);
          return;
        }
      }
      if (signal.aborted) return;
      const { reconnectMinMs, reconnectMaxMs } = this.client.options;
      const delay = Math.min(reconnectMaxMs, reconnectMinMs * 2 ** attempt);
      setTimeout(() => void run(attempt + 1), delay);
    };
    void run(0);
    return promise;
  }
}

function realtimeError(message: Message): PlatformError {
  return new PlatformError({
    code: String(message.code ?? "ERROR"),
    type: "realtime",
    message: String(message.message ?? "Realtime error"),
    status: 0,
  });
}

function networkFailure(message: string): PlatformError {
  return new PlatformError({ code: "NETWORK_ERROR", type: "network", message, status: 0 });
}

function closedError(): PlatformError {
  return new PlatformError({
    code: "CLOSED",
    type: "network",
    message: "The realtime client is closed",
    status: 0,
  });
}
