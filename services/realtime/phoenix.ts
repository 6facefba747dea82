import { z } from "zod";
import { AppError, errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import { CLOSE, privateChannel, type RealtimeService } from "./service.ts";
import { CHANNEL_NAME } from "./protocol.ts";
import { PRIVATE_PREFIX } from "./project_hub.ts";
import {
  decodeFrame,
  encodeMessage,
  encodeUserBroadcast,
  type FrameError,
  type PhoenixMessage,
  type Vsn,
} from "./phoenix_codec.ts";
import {
  type BroadcastEncoder,
  type BroadcastEvent,
  type ChangeSpec,
  type Connection,
  type Frame,
  type PresenceState,
  type Protocol,
  type ServerEvent,
  specMatches,
} from "./types.ts";
import { fnv1a } from "../../lib/fnv.ts";

const encoder = new TextEncoder();

/**
 * The broadcasts of each version, shared by all its connections. Phoenix pushes a broadcast to a channel's
 * members with no `ref` nor `join_ref` (realtime-js matches it by topic), as Supabase Realtime does, so every
 * member gets the same frame. The topic is the channel's name after `realtime:` (a private channel's without
 * the hub's prefix). vsn 2.0.0: a kind 4 binary frame (a JSON array frame when the topic or the event is too
 * long for its header); vsn 1.0.0 has no binary frame, and gets no raw bytes (Supabase drops them too).
 */
const BROADCASTS: Record<Vsn, BroadcastEncoder> = {
  "1.0.0": { key: "phx1.0.0", encode: (event) => broadcastMessage("1.0.0", event) },
  "2.0.0": {
    key: "phx2.0.0",
    encode: (event) =>
      encodeUserBroadcast(topicOf(event.channel), event.event, event.payload) ??
        broadcastMessage("2.0.0", event),
  },
};

function topicOf(channel: string): string {
  return `realtime:${channel.startsWith(PRIVATE_PREFIX) ? channel.slice(PRIVATE_PREFIX.length) : channel}`;
}

function broadcastMessage(vsn: Vsn, event: BroadcastEvent): string | null {
  if (event.payload instanceof Uint8Array) return null;
  return encodeMessage(vsn, {
    topic: topicOf(event.channel),
    event: "broadcast",
    payload: { type: "broadcast", event: event.event, payload: event.payload },
    ref: null,
    join_ref: null,
  });
}

/** A stored broadcast's time to live: `true` for the longest, or `{ttl}` seconds (realtime-js's `persist`). */
const Persist = z.union([z.literal(true), z.object({ ttl: z.number().int().min(1) })]);

const Join = z.object({
  config: z.object({
    broadcast: z.object({
      ack: z.boolean().optional(),
      self: z.boolean().optional(),
      /** Stored broadcasts of a private channel to replay at join: since `since` (epoch ms), at most `limit`. */
      replay: z.object({
        since: z.number().int().min(0),
        limit: z.number().int().min(1).max(25).optional(),
      }).optional(),
    }).optional(),
    presence: z.object({ key: z.string().max(255).optional(), enabled: z.boolean().optional() }).optional(),
    postgres_changes: z.array(z.object({
      event: z.enum(["INSERT", "UPDATE", "DELETE", "*"]),
      schema: z.string().min(1).max(63).optional(),
      table: z.string().min(1).max(63).optional(),
      filter: z.string().max(1024).optional(),
    })).max(20).optional(),
    private: z.boolean().optional(),
  }).optional(),
  access_token: z.string().min(1).max(8192).nullish(),
});

const Broadcast = z.object({
  type: z.literal("broadcast"),
  event: z.string().min(1).max(255),
  payload: z.unknown(),
  /** realtime-js's request to store the message for replay (`send({persist})`, a private channel's only). */
  persist: z.union([Persist, z.literal(false)]).optional(),
});
const Presence = z.discriminatedUnion("event", [
  z.object({
    type: z.literal("presence"),
    event: z.literal("track"),
    payload: z.record(z.string(), z.unknown()),
  }),
  z.object({ type: z.literal("presence"), event: z.literal("untrack") }),
]);
const AccessToken = z.object({ access_token: z.string().min(1).max(8192) });

/** Presence as realtime-js reads it: `{key: {metas: [{phx_ref, …meta}]}}`. */
type PhoenixPresence = Record<string, { metas: Record<string, unknown>[] }>;

/** One joined topic of a connection. */
interface Topic {
  topic: string;
  joinRef: string | null;
  /** The hub channel: the topic without `realtime:`; private topics live apart, under `!private:`. */
  channel: string;
  changes: ChangeSpec[];
  /** The id realtime-js matches each change spec by, aligned with `changes`. */
  ids: number[];
  presenceEnabled: boolean;
  /** The presence this client was last told, by key then phx_ref; null before the first presence_state. */
  presence: Map<string, Map<string, Record<string, unknown>>> | null;
}

/**
 * The Phoenix channel protocol of realtime-js over one connection (docs/realtime.md, "Realtime from
 * supabase-js"): a second protocol over the same hub, with the same checks and limits as the platform's own.
 */
export class PhoenixProtocol implements Protocol {
  private readonly topics = new Map<string, Topic>();
  private readonly byChannel = new Map<string, Topic>();
  private presenceRefs = 0;

  /** This version's broadcasts (the service takes them from the event's cache, the same for every member). */
  readonly broadcasts: BroadcastEncoder;

  constructor(private readonly service: RealtimeService, readonly vsn: Vsn) {
    this.broadcasts = BROADCASTS[vsn];
  }

  /** Encodes a change or a presence for this connection, or null when it has nothing for it. */
  encode(_conn: Connection, event: Exclude<ServerEvent, BroadcastEvent>): Frame | null {
    const topic = this.byChannel.get(event.channel);
    if (!topic) return null;
    switch (event.kind) {
      case "postgres_changes": {
        const { change } = event;
        const matched = topic.changes.flatMap((spec, i) => specMatches(spec, change, event.row) ? [i] : []);
        if (matched.length === 0) return null;
        const ids = matched.map((i) => topic.ids[i]!);
        const key = `phx${this.vsn}:${ids.join(",")}`;
        let frame = event.cache.get(key);
        if (frame === undefined) {
          const data: Record<string, unknown> = {
            schema: change.schema,
            table: change.table,
            commit_timestamp: change.commit_timestamp,
            type: change.type,
            columns: topic.changes[matched[0]!]!.columns ?? [],
            errors: null,
          };
          if (change.type !== "DELETE") data.record = change.record;
          if (change.type !== "INSERT") data.old_record = change.old_record;
          frame = this.push(topic.topic, "postgres_changes", { ids, data });
          event.cache.set(key, frame);
        }
        return frame;
      }
      case "presence_state":
        return topic.presenceEnabled ? this.presenceFrame(topic, event.state) : null;
    }
  }

  /** Before the connection closes: every joined topic gets a `system` error and `phx_close`. */
  fatal(_conn: Connection, error: { code: string; message: string }): Frame[] {
    const frames: Frame[] = [];
    for (const t of this.topics.values()) {
      frames.push(this.message(
        t.topic,
        "system",
        {
          channel: subTopic(t.topic),
          extension: "system",
          status: "error",
          code: error.code,
          message: error.message,
        },
        null,
        t.joinRef,
      ));
      frames.push(this.message(t.topic, "phx_close", {}, null, t.joinRef));
    }
    return frames;
  }

  /** Handles one client frame; a bad one gets an error reply and the socket stays open. */
  async receive(conn: Connection, data: string | Uint8Array): Promise<void> {
    const max = this.service.options.maxMessageBytes;
    const size = typeof data === "string"
      ? (data.length > max || data.length * 3 <= max ? data.length : encoder.encode(data).length)
      : data.length;
    if (size > max) return this.refuse(conn, { reason: `Frame is larger than the limit of ${max} bytes` });
    const decoded = decodeFrame(this.vsn, data);
    if (!decoded.ok) return this.refuse(conn, decoded.error);
    const m = decoded.message;
    try {
      await this.handle(conn, m);
    } catch (err) {
      if (err instanceof AppError && err.code === "INVALID_TOKEN") {
        return this.service.fail(conn, CLOSE.invalidToken, { code: err.code, message: err.message });
      }
      if (!(err instanceof AppError)) {
        log.warn("realtime phoenix message failed", { cause: describeError(err) });
      }
      const reason = err instanceof AppError
        ? `${err.code}: ${err.message}`
        : "INTERNAL_ERROR: Internal error";
      this.reply(conn, m, "error", { reason });
    }
  }

  private async handle(conn: Connection, m: PhoenixMessage): Promise<void> {
    if (m.topic === "phoenix") {
      if (m.event === "heartbeat") return this.reply(conn, m, "ok", {});
      return this.reply(conn, m, "error", { reason: `Unknown event "${m.event}" on topic phoenix` });
    }
    if (m.event === "phx_join") return await this.join(conn, m);
    const topic = this.topics.get(m.topic);
    if (!topic) return this.reply(conn, m, "error", { reason: "unmatched topic" });
    switch (m.event) {
      case "phx_leave":
        this.forget(topic);
        await this.service.unsubscribe(conn, topic.channel);
        return this.reply(conn, m, "ok", {});
      case "access_token": {
        const { access_token } = parse(AccessToken, m.payload, "access_token");
        await this.service.renewToken(conn, access_token, true);
        return await this.recheckPrivate(conn);
      }
      case "broadcast": {
        const b = parse(Broadcast, m.payload, "broadcast");
        const persist = b.persist === true ? true : b.persist ? b.persist.ttl : undefined;
        try {
          const sub = await this.service.broadcast(conn, topic.channel, b.event, b.payload ?? null, persist);
          if (sub.broadcastAck) this.reply(conn, m, "ok", {});
        } catch (err) {
          // realtime-js resolves send() with `response.error` when it asked to store the message.
          if (persist === undefined || !(err instanceof AppError)) throw err;
          this.reply(conn, m, "error", { reason: `${err.code}: ${err.message}`, error: err.message });
        }
        return;
      }
      case "presence": {
        const p = parse(Presence, m.payload, "presence");
        topic.presenceEnabled = true;
        const meta = p.event === "track" ? { ...p.payload, phx_ref: this.presenceRef(conn) } : null;
        await this.service.updatePresence(conn, topic.channel, meta);
        return this.reply(conn, m, "ok", {});
      }
      default:
        return this.reply(conn, m, "error", { reason: `Unknown event "${m.event.slice(0, 50)}"` });
    }
  }

  private async join(conn: Connection, m: PhoenixMessage): Promise<void> {
    const name = subTopic(m.topic);
    if (!name || !CHANNEL_NAME.test(name)) {
      return this.reply(conn, m, "error", {
        reason: 'VALIDATION_ERROR: topic must be "realtime:" and 1-255 letters, digits or _-:.@/',
      });
    }
    const join = parse(Join, m.payload, "phx_join");
    const config = join.config ?? {};
    if (join.access_token) {
      // A join with a bad token is refused, as Supabase Realtime does; the socket and other channels stay.
      try {
        await this.service.renewToken(conn, join.access_token, true);
      } catch (err) {
        if (err instanceof AppError) {
          return this.reply(conn, m, "error", { reason: `${err.code}: ${err.message}` });
        }
        throw err;
      }
    }
    if (config.broadcast?.replay && !config.private) {
      return this.reply(conn, m, "error", {
        reason: "VALIDATION_ERROR: broadcast.replay needs a private channel (config.private: true)",
      });
    }
    // A private topic is joined only by who may receive its broadcasts or its presence (Supabase's rule).
    const access = config.private ? await this.service.channelAccess(conn, name) : undefined;
    if (access && !access.broadcastRead && !access.presenceRead) {
      return this.reply(conn, m, "error", {
        reason: `Unauthorized: You do not have permissions to read from this Channel topic: ${name}`,
      });
    }
    const specs = (config.postgres_changes ?? []).map((s) => {
      if (!s.table) {
        throw errors.validation(
          "postgres_changes: table is required (a whole schema cannot be subscribed to)",
        );
      }
      return { event: s.event, schema: s.schema ?? "public", table: s.table, filter: s.filter };
    });
    const channel = config.private ? privateChannel(name) : name;
    const previous = this.topics.get(m.topic);
    await this.service.subscribe(conn, {
      channel,
      name,
      postgres_changes: specs,
      presenceKey: config.presence?.key || crypto.randomUUID(),
      broadcastSelf: config.broadcast?.self ?? false,
      broadcastAck: config.broadcast?.ack ?? false,
      access,
    }, (changes) => {
      const topic: Topic = {
        topic: m.topic,
        joinRef: m.join_ref ?? m.ref,
        channel,
        changes,
        ids: changes.map(changeId),
        presenceEnabled: config.presence?.enabled ?? true,
        presence: null,
      };
      if (previous && previous.channel !== channel) {
        this.forget(previous);
        void this.service.unsubscribe(conn, previous.channel);
      }
      this.topics.set(m.topic, topic);
      this.byChannel.set(channel, topic);
      this.reply(conn, m, "ok", {
        postgres_changes: changes.map((c, i) => ({
          id: topic.ids[i],
          event: c.event,
          schema: c.schema,
          table: c.table,
          ...(c.filterText !== undefined ? { filter: c.filterText } : {}),
        })),
      });
    });
    const topic = this.topics.get(m.topic);
    const replay = config.broadcast?.replay;
    if (topic && replay && access?.broadcastRead) await this.replay(conn, topic, name, replay);
    if (topic && topic.changes.length > 0) {
      this.service.send(
        conn,
        this.message(
          m.topic,
          "system",
          {
            channel: name,
            extension: "postgres_changes",
            message: "Subscribed to PostgreSQL",
            status: "ok",
          },
          null,
          topic.joinRef,
        ),
        "system",
      );
    }
  }

  /** Sends a joining member the stored broadcasts it asked to replay, each with `meta: {replayed: true, id}`. */
  private async replay(
    conn: Connection,
    topic: Topic,
    name: string,
    replay: { since: number; limit?: number },
  ): Promise<void> {
    const stored = await this.service.storedBroadcasts(conn.project, name, replay.since, replay.limit);
    for (const s of stored) {
      const meta = { replayed: true, id: s.id };
      const frame =
        (this.vsn === "2.0.0" ? encodeUserBroadcast(topic.topic, s.event, s.payload, meta) : null) ??
          this.push(topic.topic, "broadcast", {
            type: "broadcast",
            event: s.event,
            payload: s.payload,
            meta,
          });
      this.service.send(conn, frame, "broadcast");
    }
  }

  /**
   * After a new token, every private topic's policies are evaluated again for it: a topic it may no longer read
   * is closed (a `system` error, then `phx_close`), as Supabase Realtime does.
   */
  private async recheckPrivate(conn: Connection): Promise<void> {
    for (const topic of [...this.topics.values()]) {
      const sub = conn.channels.get(topic.channel);
      if (!sub?.access) continue;
      const name = subTopic(topic.topic);
      const access = await this.service.channelAccess(conn, name);
      if (access.broadcastRead || access.presenceRead) {
        sub.access = access;
        continue;
      }
      const message = `You do not have permissions to read from this Channel topic: ${name}`;
      this.service.send(
        conn,
        this.message(
          topic.topic,
          "system",
          {
            channel: name,
            extension: "system",
            status: "error",
            message,
          },
          null,
          topic.joinRef,
        ),
        "system",
      );
      this.service.send(conn, this.message(topic.topic, "phx_close", {}, null, topic.joinRef), "system");
      this.forget(topic);
      await this.service.unsubscribe(conn, topic.channel);
    }
  }

  private forget(topic: Topic): void {
    this.topics.delete(topic.topic);
    if (this.byChannel.get(topic.channel) === topic) this.byChannel.delete(topic.channel);
  }

  private presenceRef(conn: Connection): string {
    return `${conn.id}.${++this.presenceRefs}`;
  }

  /** The first presence goes out whole (`presence_state`); later ones as `presence_diff` from the last. */
  private presenceFrame(topic: Topic, state: PresenceState): Frame | null {
    const next = new Map<string, Map<string, Record<string, unknown>>>();
    for (const [key, metas] of Object.entries(state)) {
      const byRef = new Map<string, Record<string, unknown>>();
      for (const meta of metas) {
        const ref = typeof meta.phx_ref === "string" ? meta.phx_ref : `k${fnv1a(key + JSON.stringify(meta))}`;
        byRef.set(ref, { ...meta, phx_ref: ref });
      }
      next.set(key, byRef);
    }
    const previous = topic.presence;
    topic.presence = next;
    if (previous === null) return this.push(topic.topic, "presence_state", toPhoenix(next));
    const joins = diff(next, previous);
    const leaves = diff(previous, next);
    if (Object.keys(joins).length === 0 && Object.keys(leaves).length === 0) return null;
    return this.push(topic.topic, "presence_diff", { joins, leaves });
  }

  private refuse(conn: Connection, error: FrameError): void {
    const reply = this.message(
      error.topic ?? "phoenix",
      "phx_reply",
      {
        status: "error",
        response: { reason: `VALIDATION_ERROR: ${error.reason}` },
      },
      error.ref ?? null,
      error.join_ref ?? null,
    );
    this.service.send(conn, reply, "error");
  }

  private reply(conn: Connection, m: PhoenixMessage, status: "ok" | "error", response: unknown): void {
    const joinRef = m.event === "phx_join" ? (m.join_ref ?? m.ref) : m.join_ref;
    this.service.send(
      conn,
      this.message(m.topic, "phx_reply", { status, response }, m.ref, joinRef),
      "reply",
    );
  }

  private push(topic: string, event: string, payload: unknown): string {
    return this.message(topic, event, payload, null, null);
  }

  private message(
    topic: string,
    event: string,
    payload: unknown,
    ref: string | null,
    join_ref: string | null,
  ): string {
    return encodeMessage(this.vsn, { topic, event, payload, ref, join_ref });
  }
}

function subTopic(topic: string): string {
  return topic.startsWith("realtime:") ? topic.slice("realtime:".length) : "";
}

function parse<T>(schema: z.ZodType<T>, payload: unknown, what: string): T {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    return path ? `${path}: ${i.message}` : i.message;
  });
  throw errors.validation(`Invalid ${what} payload: ${issues.join("; ")}`);
}

/** The metas of `a` whose phx_ref `b` lacks, by key. */
function diff(
  a: Map<string, Map<string, Record<string, unknown>>>,
  b: Map<string, Map<string, Record<string, unknown>>>,
): PhoenixPresence {
  const out: PhoenixPresence = {};
  for (const [key, metas] of a) {
    const other = b.get(key);
    const only = [...metas].filter(([ref]) => !other?.has(ref)).map(([, meta]) => meta);
    if (only.length > 0) out[key] = { metas: only };
  }
  return out;
}

function toPhoenix(state: Map<string, Map<string, Record<string, unknown>>>): PhoenixPresence {
  const out: PhoenixPresence = {};
  for (const [key, metas] of state) out[key] = { metas: [...metas.values()] };
  return out;
}

/** The id of a change spec, the same for the same spec on every connection (as Supabase Realtime's). */
function changeId(spec: ChangeSpec): number {
  return fnv1a(`${spec.event}|${spec.schema}|${spec.table}|${spec.filterText ?? ""}`);
}
