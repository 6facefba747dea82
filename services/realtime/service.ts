import type { Databases } from "../../db/databases.ts";
import type { TokenService } from "../auth/tokens.ts";
import { randomHex } from "../../lib/crypto.ts";
import { AppError, errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import type { Project, ProjectService } from "../projects/projects.ts";
import { FilterError, parseFilter } from "./filter.ts";
import { PRIVATE_PREFIX, ProjectHub } from "./project_hub.ts";
import { realtimeStore, REPLAY_KEEP_SECONDS } from "./store.ts";
import { type ClientMessage, parseClientMessage, type ProtocolError } from "./protocol.ts";
import { encodeJson, jsonBroadcasts } from "./json_protocol.ts";
import { channelAccess } from "./visibility.ts";
import {
  broadcastFrame,
  type ChangeSpec,
  type ChannelAccess,
  type Connection,
  type Credentials,
  type Frame,
  groupKeyOf,
  type Protocol,
  type ServerEvent,
  type Sink,
  type Subscription,
} from "./types.ts";

/** Limits and timings of realtime, from the configuration. */
export interface RealtimeOptions {
  /** How often every connection's token is re-validated (at most 5 minutes). */
  tokenCheckMs: number;
  /** Bytes a connection may have queued before it is dropped as a slow consumer. */
  maxBufferBytes: number;
  /** Channels one connection may subscribe to. */
  maxChannels: number;
  /** Largest client message, in bytes. */
  maxMessageBytes: number;
  /** Interval of SSE heartbeat comments. */
  sseHeartbeatMs: number;
}

/** Dependencies of the {@linkcode RealtimeService}. */
export interface RealtimeDeps {
  dbs: Databases;
  projects: ProjectService;
  tokens: TokenService;
}

/** WebSocket close codes of the protocol. */
export const CLOSE = { invalidToken: 4001, slowConsumer: 4008, shutdown: 1001 } as const;

/** How many stored broadcasts one join replays at most (Supabase's). */
export const REPLAY_MAX = 25;

const encoder = new TextEncoder();
const INTERNAL_SCHEMAS = new Set(["auth", "platform", "realtime", "pg_catalog", "information_schema"]);

/** A subscription request, in either protocol. */
export interface SubscribeInput {
  /** The hub's channel. */
  channel: string;
  /** The name checked against other projects' refs (default: channel). */
  name?: string;
  postgres_changes: { event: ChangeSpec["event"]; schema: string; table: string; filter?: string }[];
  presenceKey?: string;
  broadcastSelf: boolean;
  broadcastAck: boolean;
  /** On a private channel: what the subscriber's policies allow (see {@linkcode RealtimeService.channelAccess}). */
  access?: ChannelAccess;
}

/** A broadcast sent over HTTP: to the topic `name` (without `realtime:`), public or private. */
export interface OutsideBroadcast {
  name: string;
  event: string;
  /** JSON, or raw bytes. */
  payload: unknown;
  private: boolean;
  /** Store it for replay (private topics only): true for the longest time, or this many seconds. */
  persist?: true | number;
}

/** Options of one SSE subscription: a channel and the table changes it follows, if any. */
export interface SseSubscription {
  channel: string;
  changes: ChangeSpec[];
}

/**
 * RealtimeService owns every realtime connection of this process: it authenticates them, runs the JSON
 * protocol of docs/realtime.md, keeps one {@linkcode ProjectHub} per project, re-validates tokens on a
 * timer and drops slow consumers.
 */
export class RealtimeService {
  readonly instanceId = randomHex(8);
  private readonly hubs = new Map<string, Promise<ProjectHub>>();
  private readonly connections = new Set<Connection>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  private readonly sessionSweeper: ReturnType<typeof setInterval>;
  private closing = false;

  /** The platform's own protocol (docs/realtime.md): JSON objects with a `type`. */
  readonly jsonProtocol: Protocol = {
    broadcasts: jsonBroadcasts,
    encode: (_conn, event) => encodeJson(event),
    fatal: (_conn, error) => [JSON.stringify({ type: "error", ...error })],
    receive: (conn, data) => {
      if (typeof data === "string") return this.receive(conn, data);
      this.reply(conn, {
        type: "error",
        code: "VALIDATION_ERROR",
        message: "Binary messages are not supported",
      });
      return Promise.resolve();
    },
  };

  constructor(private readonly deps: RealtimeDeps, readonly options: RealtimeOptions) {
    this.sweeper = setInterval(() => this.sweep(), options.tokenCheckMs);
    this.sessionSweeper = setInterval(() => this.sweepSessions(), deps.tokens.revoked.checkMs);
  }

  /** Connections open in this process. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Checks the credentials given at connect: an API key of the project (public: anon, secret: service_role)
   * and optionally a user token (authenticated). 401 UNAUTHORIZED or INVALID_TOKEN otherwise.
   */
  async authenticate(project: Project, apikey: string | undefined, token?: string): Promise<Credentials> {
    return await this.withToken(project, await this.keyCredentials(project, apikey), token);
  }

  private async keyCredentials(project: Project, apikey: string | undefined): Promise<Credentials> {
    if (!apikey) {
      throw errors.unauthorized('No API key found: pass the project key as the "apikey" query parameter');
    }
    const owner = await this.deps.projects.lookupKey(apikey);
    if (!owner) throw errors.unauthorized("Invalid API key");
    if (owner.ref !== project.ref) {
      throw errors.unauthorized(`API key does not belong to project "${project.ref}"`);
    }
    return { role: owner.kind === "secret" ? "service_role" : "anon", apikey };
  }

  private async withToken(
    project: Project,
    base: Credentials,
    token: string | undefined,
  ): Promise<Credentials> {
    if (!token) return base;
    const claims = await this.deps.tokens.verify(project, token);
    // A secret key stays service_role; a public key plus a user token acts as that user.
    if (base.role === "service_role") return { ...base, claims: undefined, expiresAt: claims.exp * 1000 };
    return {
      role: "authenticated",
      apikey: base.apikey,
      claims: { ...claims },
      expiresAt: claims.exp * 1000,
    };
  }

  /** Registers a new connection over `sink`, speaking `protocol` (default: the platform's own). */
  open(
    project: Project,
    credentials: Credentials,
    sink: Sink,
    protocol: Protocol = this.jsonProtocol,
  ): Connection {
    const conn: Connection = {
      id: this.connectionId(),
      project,
      credentials,
      groupKey: groupKeyOf(credentials),
      channels: new Map(),
      sink,
      protocol,
      broadcasts: protocol.broadcasts,
      closed: false,
    };
    if (this.closing) {
      // Stopping: the client is told as those already connected were, and reconnects to another instance.
      conn.closed = true;
      sink.close(CLOSE.shutdown, "server shutting down");
      return conn;
    }
    this.connections.add(conn);
    return conn;
  }

  private connectionSeq = 0;
  private readonly connectionIdPrefix = this.instanceId.slice(0, 6);

  /**
   * A connection id unique across instances (it names presence refs): this instance's prefix and a counter, at
   * most 12 characters, which V8 keeps as one flat string (a random hex built per connection was a chain of
   * string pieces held for the connection's life).
   */
  private connectionId(): string {
    return this.connectionIdPrefix + (++this.connectionSeq).toString(36);
  }

  /** Forgets a closed connection: its subscriptions end and its presence leaves. */
  async closed(conn: Connection): Promise<void> {
    if (!this.connections.delete(conn)) return;
    conn.closed = true;
    conn.protocol.closed?.(conn);
    const hub = await this.hubs.get(conn.project.ref)?.catch(() => null);
    hub?.drop(conn);
  }

  /**
   * Delivers a hub event in the connection's protocol (see {@linkcode send}). A broadcast is the same frame for
   * every connection of a protocol: the fan-out takes it from the event's cache, in either protocol alike.
   */
  deliver = (conn: Connection, event: ServerEvent): void => {
    if (conn.closed) return;
    const frame = event.kind === "broadcast"
      ? broadcastFrame(conn.broadcasts, event)
      : conn.protocol.encode(conn, event);
    if (frame !== null) this.send(conn, frame, event.kind);
  };

  /** Sends an encoded message unless the connection's buffer is past its bound; then drops the connection. */
  send(conn: Connection, frame: Frame, kind: string): void {
    if (conn.closed) return;
    if (conn.sink.bufferedAmount() > this.options.maxBufferBytes) {
      this.fail(conn, CLOSE.slowConsumer, {
        code: "SLOW_CONSUMER",
        message: `Connection dropped: more than ${this.options.maxBufferBytes} bytes waiting to be read`,
      });
      return;
    }
    conn.sink.send(frame, kind);
  }

  /** Sends an error and closes the connection. */
  fail(conn: Connection, code: number, error: ProtocolError): void {
    if (conn.closed) return;
    try {
      for (const frame of conn.protocol.fatal(conn, error)) conn.sink.send(frame, "error");
    } catch { /* the transport is gone */ }
    conn.sink.close(code, error.code);
    void this.closed(conn);
  }

  private reply(conn: Connection, message: Record<string, unknown>): void {
    this.send(conn, JSON.stringify(message), String(message.type));
  }

  private hub(ref: string): Promise<ProjectHub> {
    let hub = this.hubs.get(ref);
    if (!hub) {
      hub = (async () => {
        const [db, tenantDb] = await Promise.all([this.deps.dbs.project(ref), this.deps.dbs.tenant(ref)]);
        const h = new ProjectHub({
          ref,
          db,
          tenantDb,
          instanceId: this.instanceId,
          useBus: this.deps.dbs.kind === "postgres",
          maxPayloadBytes: this.options.maxMessageBytes,
          deliver: this.deliver,
          resting: () => this.deps.dbs.resting(ref),
          inBackground: (fn) => this.deps.dbs.inBackground(fn),
        });
        await h.start();
        return h;
      })();
      this.hubs.set(ref, hub);
      hub.catch(() => this.hubs.delete(ref));
    }
    return hub;
  }

  /** Handles one text frame of a WebSocket client. */
  async receive(conn: Connection, text: string): Promise<void> {
    if (conn.closed) return;
    // UTF-8 takes 1 to 3 bytes per UTF-16 unit: encode only when the length alone cannot decide.
    const max = this.options.maxMessageBytes;
    if (text.length > max || (text.length * 3 > max && encoder.encode(text).length > max)) {
      this.reply(conn, {
        type: "error",
        code: "PAYLOAD_TOO_LARGE",
        message: `Message is larger than the limit of ${this.options.maxMessageBytes} bytes`,
      });
      return;
    }
    const parsed = parseClientMessage(text);
    if (!parsed.ok) {
      this.reply(conn, {
        type: "error",
        ...(parsed.ref !== undefined ? { ref: parsed.ref } : {}),
        ...parsed.error,
      });
      return;
    }
    const message = parsed.message;
    try {
      await this.handle(conn, message);
    } catch (err) {
      const e = err instanceof AppError ? err : null;
      if (!e) log.warn("realtime message failed", { type: message.type, cause: describeError(err) });
      const error = e
        ? { code: e.code, message: e.message }
        : { code: "INTERNAL_ERROR", message: "Internal error" };
      if (e?.code === "INVALID_TOKEN") return this.fail(conn, CLOSE.invalidToken, error);
      this.reply(conn, { type: "error", ...withRef(message), ...error });
    }
  }

  private async handle(conn: Connection, message: ClientMessage): Promise<void> {
    switch (message.type) {
      case "ping":
        return this.reply(conn, { type: "pong", ...withRef(message) });
      case "access_token": {
        await this.renewToken(conn, message.token);
        return this.reply(conn, {
          type: "token_refreshed",
          ...withRef(message),
          expires_at: Math.floor((conn.credentials.expiresAt ?? 0) / 1000),
        });
      }
      case "subscribe":
        // "subscribed" goes out before the channel's first presence_state, in the same tick as the subscription.
        await this.subscribe(conn, {
          channel: message.channel,
          postgres_changes: message.postgres_changes ?? [],
          presenceKey: message.presence?.key,
          broadcastSelf: message.broadcast?.self ?? false,
          broadcastAck: message.broadcast?.ack ?? false,
        }, () => this.reply(conn, { type: "subscribed", ...withRef(message), channel: message.channel }));
        return;
      case "unsubscribe": {
        if (!await this.unsubscribe(conn, message.channel)) throw notSubscribed(message.channel);
        return this.reply(conn, { type: "unsubscribed", ...withRef(message), channel: message.channel });
      }
      case "broadcast": {
        const sub = await this.broadcast(conn, message.channel, message.event, message.payload ?? null);
        if (sub.broadcastAck) {
          this.reply(conn, { type: "broadcast_ack", ...withRef(message), channel: message.channel });
        }
        return;
      }
      case "presence_update":
        return await this.updatePresence(conn, message.channel, message.state);
    }
  }

  // ---- the operations of both protocols ----

  /**
   * Renews a connection's user token: RLS follows it from then on. With `keys`, the token may also be one of
   * the project's API keys (supabase-js sends its key when nobody is signed in): the connection then acts as
   * that key's role. 401 INVALID_TOKEN otherwise.
   */
  async renewToken(conn: Connection, token: string, keys = false): Promise<void> {
    const owner = keys && !token.includes(".") ? await this.deps.projects.lookupKey(token) : undefined;
    conn.credentials = owner ? await this.keyCredentials(conn.project, token) : await this.withToken(
      conn.project,
      { role: conn.credentials.role, apikey: conn.credentials.apikey },
      token,
    );
    conn.groupKey = groupKeyOf(conn.credentials);
  }

  /**
   * Subscribes a connection to a channel after checking the channel limit, the name and the table changes;
   * `ready` runs with the validated changes just before the subscription starts, in the same tick.
   */
  async subscribe(
    conn: Connection,
    input: SubscribeInput,
    ready: (changes: ChangeSpec[]) => void,
  ): Promise<void> {
    if (!conn.channels.has(input.channel) && conn.channels.size >= this.options.maxChannels) {
      throw errors.limitExceeded(
        `A connection may subscribe to at most ${this.options.maxChannels} channels`,
      );
    }
    await this.checkChannel(conn.project, input.name ?? input.channel);
    const changes = await this.changeSpecs(conn, input.postgres_changes);
    if (conn.closed) return;
    const hub = await this.hub(conn.project.ref);
    if (conn.closed) return;
    ready(changes);
    hub.subscribe(conn, {
      channel: input.channel,
      changes,
      presenceKey: input.presenceKey,
      broadcastSelf: input.broadcastSelf,
      broadcastAck: input.broadcastAck,
      access: input.access,
    });
  }

  /** Ends a subscription; false when there was none. */
  async unsubscribe(conn: Connection, channel: string): Promise<boolean> {
    if (!conn.channels.has(channel)) return false;
    const hub = await this.hub(conn.project.ref);
    return hub.unsubscribe(conn, channel);
  }

  /**
   * Sends a broadcast to a channel the connection is subscribed to; returns that subscription. `persist` also
   * stores it for replay (a private channel's only): true for the longest time, or this many seconds.
   */
  async broadcast(
    conn: Connection,
    channel: string,
    event: string,
    payload: unknown,
    persist?: true | number,
  ): Promise<Subscription> {
    const sub = conn.channels.get(channel);
    if (!sub) throw notSubscribed(channel);
    if (sub.access && !sub.access.broadcastWrite) {
      throw errors.forbidden(`You do not have permissions to broadcast to this Channel topic: ${channel}`);
    }
    if (persist !== undefined) {
      if (!sub.access) {
        throw errors.validation("A broadcast can only be stored (persist) on a private channel");
      }
      const name = channel.slice(PRIVATE_PREFIX.length);
      await this.storeBroadcast(conn.project, name, event, payload, persist === true ? undefined : persist);
    }
    const hub = await this.hub(conn.project.ref);
    hub.broadcast(conn, channel, event, payload);
    return sub;
  }

  /** Sets the connection's presence in a channel (`null`: leaves the presence, stays subscribed). */
  async updatePresence(
    conn: Connection,
    channel: string,
    state: Record<string, unknown> | null,
  ): Promise<void> {
    const sub = conn.channels.get(channel);
    if (!sub) throw notSubscribed(channel);
    if (!sub.presenceKey) {
      throw errors.validation(`Channel "${channel}" was subscribed without a presence key`);
    }
    if (state !== null && sub.access && !sub.access.presenceWrite) {
      throw errors.forbidden(
        `You do not have permissions to track presence in this Channel topic: ${channel}`,
      );
    }
    const hub = await this.hub(conn.project.ref);
    if (state === null) hub.removePresence(conn, channel);
    else hub.updatePresence(conn, channel, sub.presenceKey, state);
  }

  /**
   * What the connection's role and claims may do on the private topic `name` under the project's policies on
   * `realtime.messages` (docs/realtime.md, "Private channels"). The secret key (service_role) may do everything,
   * as it bypasses RLS.
   */
  async channelAccess(
    conn: Pick<Connection, "project" | "credentials">,
    name: string,
  ): Promise<ChannelAccess> {
    const { role, claims } = conn.credentials;
    if (role === "service_role") {
      return { broadcastRead: true, broadcastWrite: true, presenceRead: true, presenceWrite: true };
    }
    return await channelAccess(await this.deps.dbs.tenant(conn.project.ref), { role, claims }, name);
  }

  /**
   * Stores a broadcast of the private topic `name` for replay (`persist`), for `keepSeconds` (at most
   * {@linkcode REPLAY_KEEP_SECONDS}). The caller has checked the sender's right to send there. JSON payloads only.
   */
  async storeBroadcast(
    project: Project,
    name: string,
    event: string,
    payload: unknown,
    keepSeconds?: number,
  ): Promise<string> {
    if (payload instanceof Uint8Array) {
      throw errors.validation("A binary broadcast cannot be stored: only JSON payloads are kept for replay");
    }
    const keep = Math.min(Math.max(Math.trunc(keepSeconds ?? REPLAY_KEEP_SECONDS), 1), REPLAY_KEEP_SECONDS);
    const db = await this.deps.dbs.project(project.ref);
    return await realtimeStore.storeBroadcast(db, { topic: name, event, payload, keepSeconds: keep });
  }

  /** The stored broadcasts of the private topic `name` since `sinceMs`, oldest first, at most `limit` (≤ 25). */
  async storedBroadcasts(
    project: Project,
    name: string,
    sinceMs: number,
    limit = REPLAY_MAX,
  ): Promise<{ id: string; event: string; payload: unknown }[]> {
    const db = await this.deps.dbs.project(project.ref);
    return await realtimeStore.storedBroadcasts(db, name, sinceMs, Math.min(Math.max(limit, 1), REPLAY_MAX));
  }

  /**
   * Sends broadcasts from outside any connection (the HTTP API of supabase-js), each to the public channel
   * `name` or to the private one. Every message is checked before any is sent: a private topic the caller's
   * policies do not let it send to is 403 FORBIDDEN, and nothing goes out.
   */
  async broadcastFrom(
    project: Project,
    credentials: Credentials,
    messages: OutsideBroadcast[],
  ): Promise<void> {
    const allowed = new Map<string, boolean>();
    const max = this.options.maxMessageBytes;
    for (const m of messages) {
      const size = m.payload instanceof Uint8Array
        ? m.payload.length
        : encoder.encode(JSON.stringify(m.payload ?? null)).length;
      if (size > max) throw errors.tooLarge(max);
      await this.checkChannel(project, m.name);
      if (!m.private || allowed.get(m.name)) continue;
      const { broadcastWrite } = await this.channelAccess({ project, credentials }, m.name);
      if (!broadcastWrite) {
        throw errors.forbidden(`You do not have permissions to broadcast to this Channel topic: ${m.name}`);
      }
      allowed.set(m.name, true);
    }
    for (const m of messages) {
      if (m.persist === undefined) continue;
      if (!m.private) {
        throw errors.validation("A broadcast can only be stored (persist) on a private channel");
      }
      if (m.payload instanceof Uint8Array) {
        throw errors.validation(
          "A binary broadcast cannot be stored: only JSON payloads are kept for replay",
        );
      }
    }
    const hub = await this.hub(project.ref);
    for (const m of messages) {
      if (m.persist !== undefined) {
        await this.storeBroadcast(
          project,
          m.name,
          m.event,
          m.payload,
          m.persist === true ? undefined : m.persist,
        );
      }
      hub.broadcast(null, m.private ? privateChannel(m.name) : m.name, m.event, m.payload);
    }
  }

  /** A channel prefixed with another project's ref (`<ref>:…`) is forbidden. */
  private async checkChannel(project: Project, channel: string): Promise<void> {
    const colon = channel.indexOf(":");
    if (colon <= 0) return;
    const prefix = channel.slice(0, colon);
    if (prefix !== project.ref && await this.deps.projects.find(prefix).catch(() => null)) {
      throw errors.forbidden(`Channel "${channel}" belongs to another project`);
    }
  }

  /** Validates the postgres_changes of a subscription: captured table, readable by the role, good filter. */
  async changeSpecs(
    conn: Pick<Connection, "project" | "credentials">,
    specs: { event: ChangeSpec["event"]; schema: string; table: string; filter?: string }[],
  ): Promise<ChangeSpec[]> {
    const out: ChangeSpec[] = [];
    const db = specs.length ? await this.deps.dbs.project(conn.project.ref) : null;
    for (const spec of specs) {
      const name = `${spec.schema}.${spec.table}`;
      if (INTERNAL_SCHEMAS.has(spec.schema) || spec.schema.startsWith("pg_")) {
        throw errors.forbidden(`Table "${name}" is internal and cannot be subscribed to`);
      }
      const table = await realtimeStore.capturedTable(db!, spec.schema, spec.table, conn.credentials.role);
      if (!table) {
        throw errors.notFound(
          `Table "${name}" does not exist or is not enabled for realtime: run select realtime.enable('${name}')`,
        );
      }
      if (!table.readable) {
        throw errors.forbidden(`Role ${conn.credentials.role} may not read table "${name}"`);
      }
      let filter;
      if (spec.filter !== undefined) {
        try {
          filter = parseFilter(spec.filter);
        } catch (err) {
          if (err instanceof FilterError) throw errors.validation(`Invalid filter: ${err.message}`);
          throw err;
        }
        if (!table.columns.includes(filter.column)) {
          throw errors.validation(`Invalid filter: table "${name}" has no column "${filter.column}"`);
        }
      }
      out.push({
        schema: spec.schema,
        table: spec.table,
        event: spec.event,
        filter,
        filterText: spec.filter,
        columns: table.columns.map((name, i) => ({ name, type: table.types[i] ?? "text" })),
      });
    }
    return out;
  }

  /**
   * The subscription of an SSE stream on topic `name`: the changes of the table of that name when it is
   * captured (`table` or `schema.table`), and always the broadcasts of the channel `name`.
   */
  async streamSubscription(
    project: Project,
    credentials: Credentials,
    input: { name: string; event?: ChangeSpec["event"]; filter?: string },
  ): Promise<SseSubscription> {
    const dot = input.name.indexOf(".");
    const schema = dot > 0 ? input.name.slice(0, dot) : "public";
    const table = dot > 0 ? input.name.slice(dot + 1) : input.name;
    const db = await this.deps.dbs.project(project.ref);
    if (!await realtimeStore.isCaptured(db, schema, table)) {
      if (input.filter !== undefined) {
        throw errors.notFound(`Table "${schema}.${table}" does not exist or is not enabled for realtime`);
      }
      return { channel: input.name, changes: [] };
    }
    const changes = await this.changeSpecs({ project, credentials }, [
      { schema, table, event: input.event ?? "*", filter: input.filter },
    ]);
    return { channel: input.name, changes };
  }

  /** Subscribes a connection that cannot send messages (SSE) to one channel. */
  async subscribeStream(conn: Connection, sub: SseSubscription): Promise<void> {
    if (conn.closed) return;
    const hub = await this.hub(conn.project.ref);
    if (conn.closed) return;
    hub.subscribe(conn, {
      channel: sub.channel,
      changes: sub.changes,
      broadcastSelf: false,
      broadcastAck: false,
    });
  }

  /** Re-validates every connection: an expired token or a revoked key ends it, with an error first. */
  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const conn of [...this.connections]) {
      const { credentials } = conn;
      if (credentials.expiresAt !== undefined && credentials.expiresAt <= now) {
        this.fail(conn, CLOSE.invalidToken, { code: "INVALID_TOKEN", message: "Token has expired" });
        continue;
      }
      const owner = await this.deps.projects.lookupKey(credentials.apikey).catch(() => undefined);
      if (owner === null) {
        this.fail(conn, CLOSE.invalidToken, { code: "UNAUTHORIZED", message: "API key is no longer valid" });
      }
    }
  }

  /** Ends the connections whose user session was revoked (sign-out, refresh token reuse), with an error first. */
  private async sweepSessions(): Promise<void> {
    for (const conn of [...this.connections]) {
      const sessionId = conn.credentials.claims?.session_id;
      if (typeof sessionId !== "string") continue;
      if (await this.deps.tokens.revoked.isRevoked(conn.project.ref, sessionId).catch(() => false)) {
        this.fail(conn, CLOSE.invalidToken, {
          code: "INVALID_TOKEN",
          message: "Session has ended: sign in again",
        });
      }
    }
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.sweeper);
    clearInterval(this.sessionSweeper);
    for (const conn of [...this.connections]) {
      conn.sink.close(CLOSE.shutdown, "server shutting down");
      await this.closed(conn);
    }
    const hubs = [...this.hubs.values()];
    this.hubs.clear();
    await Promise.all(hubs.map(async (h) => (await h.catch(() => null))?.stop()));
  }
}

/** The hub channel of the private topic `name`: apart from the public channel of the same name. */
export function privateChannel(name: string): string {
  return PRIVATE_PREFIX + name;
}

function withRef(message: { ref?: string | number }): { ref?: string | number } {
  return message.ref !== undefined ? { ref: message.ref } : {};
}

function notSubscribed(channel: string): AppError {
  return errors.validation(`Not subscribed to channel "${channel}"`);
}
