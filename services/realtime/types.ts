import type { Project } from "../projects/projects.ts";
import type { Filter } from "./filter.ts";

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

/** A transport to one client: a WebSocket or an SSE stream. */
export interface Sink {
  /** Sends one server message (already serialized JSON), with its kind for SSE framing. */
  send(text: string, kind: string): void;
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
}

/** A connection's subscription to one channel. */
export interface Subscription {
  channel: string;
  changes: ChangeSpec[];
  presenceKey?: string;
  broadcastSelf: boolean;
  broadcastAck: boolean;
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
  closed: boolean;
}

/** The group key of some credentials. */
export function groupKeyOf(credentials: Credentials): string {
  return `${credentials.role}|${credentials.claims ? JSON.stringify(credentials.claims) : ""}`;
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
