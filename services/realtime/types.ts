import type { Project } from "../projects/projects.ts";
import { type Filter, matchesFilter } from "./filter.ts";

/** The database roles a realtime subscriber acts as. */
export type SubscriberRole = "anon" | "authenticated" | "service_role";

/** What a connection authenticated as: the role of its key, and the user of its token when it sent one. */
export interface Credentials {
  role: SubscriberRole;
  /** The API key given at connect, re-checked by the sweep. */
  apikey: string;
  /** The verified user claims (role authenticated). */
  claims?: Record<string, unknown>;
  /** Epoch milliseconds when the user token expires. */
  expiresAt?: number;
}

/**
 * One encoded server message: JSON text, or bytes (binary frames of the Phoenix protocol vsn 2.0.0). Bytes are
 * a whole ArrayBuffer: a WebSocket sends one with less work than a view on it.
 */
export type Frame = string | ArrayBuffer;

/** A transport to one client: a WebSocket or an SSE stream. */
export interface Sink {
  /** Sends one encoded server message, with its kind for SSE framing. */
  send(frame: Frame, kind: string): void;
  /** Bytes queued and not yet written to the network. */
  bufferedAmount(): number;
  /** Ends the transport. */
  close(code: number, reason: string): void;
}

/** One `postgres_changes` entry of a subscription, validated. */
export interface ChangeSpec {
  schema: string;
  table: string;
  event: "INSERT" | "UPDATE" | "DELETE" | "*";
  filter?: Filter;
  /** The filter as the client wrote it. */
  filterText?: string;
  /** The table's columns and their type names (`int8`, `text`…), as Supabase Realtime reports them. */
  columns?: { name: string; type: string }[];
}

/** Presence metas by key. */
export type PresenceState = Record<string, Record<string, unknown>[]>;

/** A change as subscribers receive it (docs/realtime.md, section 2). */
export interface ChangePayload {
  schema: string;
  table: string;
  type: Change["type"];
  commit_timestamp: string;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
}

/**
 * What the hub fans out to the connections of a channel. Each connection's protocol encodes it; encodings are
 * cached on the event by the protocol's key (null: nothing to send in that protocol), so a fan-out to N
 * connections of one protocol encodes once.
 */
export type ServerEvent =
  & (
    | { kind: "broadcast"; channel: string; event: string; payload: unknown }
    | { kind: "presence_state"; channel: string; state: PresenceState }
    | {
      kind: "postgres_changes";
      channel: string;
      change: ChangePayload;
      row: Record<string, unknown> | null;
    }
  )
  & { cache: Map<string, Frame | null> };

/** A broadcast as the hub fans it out. */
export type BroadcastEvent = Extract<ServerEvent, { kind: "broadcast" }>;

/**
 * How a protocol (one version of it) encodes a broadcast: one object shared by all its connections, since a
 * broadcast is the same frame for every member of a channel. A fan-out encodes once per encoder and sends the
 * cached frame to the others (see {@linkcode broadcastFrame}).
 */
export interface BroadcastEncoder {
  /** Where the frame is cached on the event: one constant string per encoder. */
  readonly key: string;
  /** The frame, or null when the protocol cannot carry this broadcast (raw bytes in a JSON protocol). */
  encode(event: BroadcastEvent): Frame | null;
}

/**
 * The frame of a broadcast for a connection using `encoder`: encoded by the first connection of the fan-out,
 * read from the event's cache by the others. Per connection: one map lookup, no allocation, whatever the
 * protocol.
 */
export function broadcastFrame(encoder: BroadcastEncoder, event: BroadcastEvent): Frame | null {
  let frame = event.cache.get(encoder.key);
  if (frame === undefined) {
    frame = encoder.encode(event);
    event.cache.set(encoder.key, frame);
  }
  return frame;
}

/** A wire protocol over a connection: the platform's JSON messages, or the Phoenix channel protocol. */
export interface Protocol {
  /** Encodes the connection's broadcasts, the same for every connection of the protocol and version. */
  readonly broadcasts: BroadcastEncoder;
  /** Encodes a change or a presence for `conn`, or null when it has nothing to send (a presence diff without change). */
  encode(conn: Connection, event: Exclude<ServerEvent, BroadcastEvent>): Frame | null;
  /** The frames telling the client why its connection ends. */
  fatal(conn: Connection, error: { code: string; message: string }): Frame[];
  /** Handles one client frame. */
  receive(conn: Connection, data: string | Uint8Array): Promise<void>;
  /** Called once the connection is gone. */
  closed?(conn: Connection): void;
}

/** What a subscriber may do on a private channel: receive and send broadcasts, see and publish presence. */
export interface ChannelAccess {
  broadcastRead: boolean;
  broadcastWrite: boolean;
  presenceRead: boolean;
  presenceWrite: boolean;
}

/** A connection's subscription to one channel. */
export interface Subscription {
  channel: string;
  changes: ChangeSpec[];
  presenceKey?: string;
  broadcastSelf: boolean;
  broadcastAck: boolean;
  /** On a private channel: what the subscriber's policies allow (absent: everything). */
  access?: ChannelAccess;
}

/** One client connection, over either transport. */
export interface Connection {
  id: string;
  project: Project;
  credentials: Credentials;
  /** Role and claims as one string: subscribers with the same key share one RLS check per change. */
  groupKey: string;
  channels: Map<string, Subscription>;
  sink: Sink;
  protocol: Protocol;
  /** The protocol's broadcast encoder, kept here so that a fan-out reads nothing of the protocol's state. */
  broadcasts: BroadcastEncoder;
  closed: boolean;
}

/** The group key of some credentials. */
export function groupKeyOf(credentials: Credentials): string {
  // Without claims the key is one of three shared strings, not a new one per connection.
  if (!credentials.claims) return ROLE_KEYS[credentials.role];
  return `${credentials.role}|${JSON.stringify(credentials.claims)}`;
}

const ROLE_KEYS: Record<SubscriberRole, string> = {
  anon: "anon|",
  authenticated: "authenticated|",
  service_role: "service_role|",
};

/** Whether a subscription's change spec asks for this change (`row`: the new row, or the old one of a DELETE). */
export function specMatches(
  spec: ChangeSpec,
  change: { schema: string; table: string; type: Change["type"] },
  row: Record<string, unknown> | null,
): boolean {
  return spec.schema === change.schema && spec.table === change.table &&
    (spec.event === "*" || spec.event === change.type) &&
    (!spec.filter || matchesFilter(spec.filter, row));
}

/** A change as the capture trigger publishes it, with the primary key columns. */
export interface Change {
  schema: string;
  table: string;
  type: "INSERT" | "UPDATE" | "DELETE";
  commit_timestamp: string;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
  primary_key: string[];
}
