import type { Db } from "../../db/driver.ts";
import { describeError, log } from "../../lib/log.ts";
import { decodeBase64Url, encodeBase64Url } from "../../lib/encoding.ts";
import { realtimeStore } from "./store.ts";
import {
  type Change,
  type ChangePayload,
  type Connection,
  type PresenceState,
  type ServerEvent,
  specMatches,
  type Subscription,
} from "./types.ts";
import { visibleTo } from "./visibility.ts";

/** Options of a {@linkcode ProjectHub}. */
export interface ProjectHubOptions {
  ref: string;
  /** The platform's pool: LISTEN, the bus, overflow payloads. */
  db: Db;
  /** The tenant pool: the RLS checks, which run the project's own policies (see Databases.tenant). */
  tenantDb: Db;
  /** This process's id on the bus: its own bus messages are ignored when they come back. */
  instanceId: string;
  /** Publish broadcasts and presence on the Postgres bus (PostgreSQL only: PGlite is one process). */
  useBus: boolean;
  /** Delivers one server event to a connection in its protocol, enforcing its buffer bound. */
  deliver: (conn: Connection, event: ServerEvent) => void;
  /** The largest broadcast payload, in bytes: `realtime.send()` from SQL refuses a larger one. */
  maxPayloadBytes?: number;
  /** True while the project database rests (closed when idle): the cleanup then leaves it closed. */
  resting?: () => boolean;
  /** Runs the cleanup as a periodic check, which does not keep an idle database open. */
  inBackground?: <T>(fn: () => Promise<T>) => Promise<T>;
}

type BusBody =
  // `binary`: the payload is raw bytes, sent as base64url in `payload`.
  | { kind: "broadcast"; channel: string; event: string; payload: unknown; binary?: true }
  | { kind: "presence"; channel: string; state: PresenceState }
  | { kind: "presence_sync"; channel: string };
type BusMessage = BusBody & { from: string };

/** A row of realtime.messages sent from SQL (`realtime.send()`), as its trigger publishes it on `realtime`. */
interface SqlBroadcast {
  kind: "broadcast";
  topic: string;
  event: string;
  private: boolean;
  payload: unknown;
}

/** The prefix of private channels in the hub (see RealtimeService's privateChannel). */
export const PRIVATE_PREFIX = "!private:";
// Seconds an overflow payload is kept for the listeners of every instance to read it.
const OVERFLOW_KEEP_SECONDS = 60;
// Changes waiting for their RLS checks; past this a change is dropped with a warning rather than grow memory.
const MAX_PENDING_CHANGES = 10_000;

/**
 * ProjectHub holds the realtime state of one project in this process: who is subscribed to what, the
 * presence of each channel, and the LISTEN connections that bring changes (trigger notifications) and the
 * broadcasts and presence of other instances (the `realtime_bus` channel).
 */
export class ProjectHub {
  /** Connections by channel. */
  private readonly channels = new Map<string, Set<Connection>>();
  /** Connections by captured table (`schema.table`). */
  private readonly tables = new Map<string, Set<Connection>>();
  /** This instance's presence: channel → connection id → {key, meta}. */
  private readonly presence = new Map<string, Map<string, { key: string; meta: Record<string, unknown> }>>();
  /** Other instances' presence: channel → instance → state. */
  private readonly remotePresence = new Map<string, Map<string, PresenceState>>();
  private readonly unlisten: (() => Promise<void>)[] = [];
  private changeQueue: Promise<void> = Promise.resolve();
  private cleaner: ReturnType<typeof setInterval> | undefined;
  private pending = 0;
  /** Changes delivered, for stats. */
  delivered = 0;

  constructor(readonly options: ProjectHubOptions) {}

  /** Starts listening; resolves once the LISTENs are in place, so that no later change is missed. */
  async start(): Promise<void> {
    const { db } = this.options;
    if (this.options.maxPayloadBytes !== undefined) {
      await realtimeStore.setPayloadLimit(db, this.options.maxPayloadBytes);
    }
    this.unlisten.push(await db.listen("realtime", (text) => this.onChange(text)));
    if (this.options.useBus) {
      this.unlisten.push(await db.listen("realtime_bus", (text) => this.onBus(text)));
    }
    // Overflow payloads were read by every listener within moments; old ones are only clutter, as are stored
    // broadcasts past their time.
    this.cleaner = setInterval(() => {
      if (this.options.resting?.()) return;
      const prune = async () => {
        await realtimeStore.pruneOverflow(db, OVERFLOW_KEEP_SECONDS);
        await realtimeStore.pruneStoredBroadcasts(db);
      };
      (this.options.inBackground?.(prune) ?? prune())
        .catch((err) => log.warn("realtime overflow cleanup failed", { cause: describeError(err) }));
    }, OVERFLOW_KEEP_SECONDS * 1000);
  }

  /** Stops listening. */
  async stop(): Promise<void> {
    clearInterval(this.cleaner);
    const fns = this.unlisten.splice(0);
    await Promise.all(fns.map((fn) => fn().catch(() => {})));
    await this.changeQueue;
  }

  /** Adds or replaces a connection's subscription to a channel. */
  subscribe(conn: Connection, sub: Subscription): void {
    this.unsubscribe(conn, sub.channel, false);
    conn.channels.set(sub.channel, sub);
    setAdd(this.channels, sub.channel, conn);
    for (const spec of sub.changes) setAdd(this.tables, `${spec.schema}.${spec.table}`, conn);
    if (sub.presenceKey) {
      const local = this.presence.get(sub.channel);
      const remote = this.remotePresence.get(sub.channel);
      if (!local?.size && !remote?.size) this.publish({ kind: "presence_sync", channel: sub.channel });
      this.sendPresence(conn, sub.channel);
    }
  }

  /** Removes a connection's subscription to a channel; its presence leaves and the others are told. */
  unsubscribe(conn: Connection, channel: string, notify = true): boolean {
    const sub = conn.channels.get(channel);
    if (!sub) return false;
    conn.channels.delete(channel);
    setDelete(this.channels, channel, conn);
    for (const spec of sub.changes) {
      const key = `${spec.schema}.${spec.table}`;
      const stillUsed = [...conn.channels.values()].some((s) =>
        s.changes.some((c) => `${c.schema}.${c.table}` === key)
      );
      if (!stillUsed) setDelete(this.tables, key, conn);
    }
    const members = this.presence.get(channel);
    if (members?.delete(conn.id)) {
      if (members.size === 0) this.presence.delete(channel);
      if (notify) this.presenceChanged(channel);
      else this.publishPresence(channel);
    }
    return true;
  }

  /** Removes every subscription of a closing connection. */
  drop(conn: Connection): void {
    for (const channel of [...conn.channels.keys()]) this.unsubscribe(conn, channel);
  }

  /** True when nobody in this process is subscribed to anything of the project. */
  idle(): boolean {
    return this.channels.size === 0;
  }

  /** Sends a broadcast to the channel's subscribers here, and to other instances over the bus. */
  broadcast(from: Connection | null, channel: string, event: string, payload: unknown): void {
    this.deliverBroadcast(from, channel, event, payload);
    if (!this.options.useBus) return;
    this.publish(
      payload instanceof Uint8Array
        ? { kind: "broadcast", channel, event, payload: encodeBase64Url(payload), binary: true }
        : { kind: "broadcast", channel, event, payload },
    );
  }

  private deliverBroadcast(from: Connection | null, channel: string, event: string, payload: unknown): void {
    const members = this.channels.get(channel);
    if (!members) return;
    const message: ServerEvent = { kind: "broadcast", channel, event, payload, cache: new Map() };
    // Only a private channel's members carry rights to look up (a fan-out to many stays one loop of sends).
    const checked = channel.startsWith(PRIVATE_PREFIX);
    for (const conn of members) {
      if (conn === from && !conn.channels.get(channel)?.broadcastSelf) continue;
      if (checked && conn.channels.get(channel)?.access?.broadcastRead === false) continue;
      this.options.deliver(conn, message);
    }
  }

  /** Sets a member's presence meta; every member of the channel gets the new state. */
  updatePresence(conn: Connection, channel: string, key: string, meta: Record<string, unknown>): void {
    let members = this.presence.get(channel);
    if (!members) this.presence.set(channel, members = new Map());
    members.set(conn.id, { key, meta });
    this.presenceChanged(channel);
  }

  /** Removes a member's presence from a channel (it stays subscribed); every member gets the new state. */
  removePresence(conn: Connection, channel: string): void {
    const members = this.presence.get(channel);
    if (!members?.delete(conn.id)) return;
    if (members.size === 0) this.presence.delete(channel);
    this.presenceChanged(channel);
  }

  /** The merged presence of a channel across instances. */
  presenceState(channel: string): PresenceState {
    const state: PresenceState = {};
    for (const remote of this.remotePresence.get(channel)?.values() ?? []) {
      for (const [key, metas] of Object.entries(remote)) (state[key] ??= []).push(...metas);
    }
    for (const { key, meta } of this.presence.get(channel)?.values() ?? []) (state[key] ??= []).push(meta);
    return state;
  }

  private localPresence(channel: string): PresenceState {
    const state: PresenceState = {};
    for (const { key, meta } of this.presence.get(channel)?.values() ?? []) (state[key] ??= []).push(meta);
    return state;
  }

  private presenceChanged(channel: string): void {
    this.publishPresence(channel);
    this.sendPresenceToAll(channel);
  }

  private publishPresence(channel: string): void {
    this.publish({ kind: "presence", channel, state: this.localPresence(channel) });
  }

  private sendPresenceToAll(channel: string): void {
    const members = this.channels.get(channel);
    if (!members) return;
    const message = this.presenceEvent(channel);
    for (const conn of members) {
      if (seesPresence(conn.channels.get(channel))) this.options.deliver(conn, message);
    }
  }

  private sendPresence(conn: Connection, channel: string): void {
    if (seesPresence(conn.channels.get(channel))) this.options.deliver(conn, this.presenceEvent(channel));
  }

  private presenceEvent(channel: string): ServerEvent {
    return { kind: "presence_state", channel, state: this.presenceState(channel), cache: new Map() };
  }

  // ---- the bus (PostgreSQL: other instances) ----

  private publish(message: BusBody): void {
    if (!this.options.useBus) return;
    const text = JSON.stringify({ ...message, from: this.options.instanceId });
    realtimeStore.publishBus(this.options.db, text).catch((err) =>
      log.warn("realtime bus publish failed", { project: this.options.ref, cause: describeError(err) })
    );
  }

  private async onBus(text: string): Promise<void> {
    let message: BusMessage;
    try {
      message = JSON.parse(await this.resolveOverflow(text)) as BusMessage;
    } catch (err) {
      log.warn("realtime bus message unreadable", { project: this.options.ref, cause: describeError(err) });
      return;
    }
    if (message.from === this.options.instanceId) return;
    switch (message.kind) {
      case "broadcast":
        this.deliverBroadcast(
          null,
          message.channel,
          message.event,
          message.binary ? decodeBase64Url(String(message.payload)) : message.payload,
        );
        break;
      case "presence": {
        let remote = this.remotePresence.get(message.channel);
        if (!remote) this.remotePresence.set(message.channel, remote = new Map());
        if (Object.keys(message.state).length === 0) remote.delete(message.from);
        else remote.set(message.from, message.state);
        if (remote.size === 0) this.remotePresence.delete(message.channel);
        this.sendPresenceToAll(message.channel);
        break;
      }
      case "presence_sync":
        if (this.presence.get(message.channel)?.size) this.publishPresence(message.channel);
        break;
    }
  }

  /** A notification whose payload was too large for NOTIFY carries `{"overflow": id}`: read the payload. */
  private async resolveOverflow(text: string): Promise<string> {
    if (!text.startsWith('{"overflow"')) return text;
    const { overflow } = JSON.parse(text) as { overflow: number };
    const payload = await realtimeStore.overflow(this.options.db, overflow);
    if (payload === null) throw new Error("overflow payload is gone");
    return payload;
  }

  // ---- changes (CDC) and broadcasts from SQL ----

  /**
   * Delivers a broadcast that SQL sent (`realtime.send()`) to the subscribers here: every instance hears the
   * notification, so nothing goes on the bus.
   */
  private deliverSqlBroadcast(m: SqlBroadcast): void {
    this.deliverBroadcast(null, m.private ? PRIVATE_PREFIX + m.topic : m.topic, m.event, m.payload);
  }

  private onChange(text: string): void {
    if (this.pending >= MAX_PENDING_CHANGES) {
      log.warn("realtime change dropped: too many pending", { project: this.options.ref });
      return;
    }
    this.pending++;
    // One change at a time per project, so that subscribers see changes in commit order.
    this.changeQueue = this.changeQueue
      .then(() => this.processChange(text))
      .catch((err) =>
        log.warn("realtime change failed", { project: this.options.ref, cause: describeError(err) })
      )
      .finally(() => this.pending--);
  }

  private async processChange(text: string): Promise<void> {
    const published = JSON.parse(await this.resolveOverflow(text)) as Change | SqlBroadcast;
    // A broadcast sent from SQL keeps its place among the changes of the same commits.
    if ("kind" in published) return this.deliverSqlBroadcast(published);
    const change = published;
    const conns = this.tables.get(`${change.schema}.${change.table}`);
    if (!conns?.size) return;
    const row = change.type === "DELETE" ? change.old_record : change.record;
    // Who asked for this change, grouped by role and claims: one RLS check per group.
    const groups = new Map<string, { conn: Connection; channels: string[] }[]>();
    for (const conn of conns) {
      if (conn.closed) continue;
      const channels: string[] = [];
      for (const sub of conn.channels.values()) {
        const wanted = sub.changes.some((spec) => specMatches(spec, change, row));
        if (wanted) channels.push(sub.channel);
      }
      if (channels.length === 0) continue;
      let group = groups.get(conn.groupKey);
      if (!group) groups.set(conn.groupKey, group = []);
      group.push({ conn, channels });
    }
    if (groups.size === 0) return;
    const entries = [...groups.values()];
    const viewers = entries.map((g) => ({
      role: g[0]!.conn.credentials.role,
      claims: g[0]!.conn.credentials.claims,
    }));
    const visible = await visibleTo(this.options.tenantDb, change, viewers);
    // The old row of an UPDATE is a row version of its own: a viewer who may see the new row but not the old one
    // (an ownership change, say) gets only its primary key, as for a DELETE.
    const oldVisible = change.type === "UPDATE" && change.old_record
      ? await visibleTo(this.options.tenantDb, { ...change, type: "DELETE" }, viewers)
      : viewers.map(() => false);
    const keyOnly = change.old_record
      ? Object.fromEntries(change.primary_key.map((c) => [c, change.old_record![c]]))
      : change.old_record;
    const payloadOf = (fullOld: boolean): ChangePayload => ({
      schema: change.schema,
      table: change.table,
      type: change.type,
      commit_timestamp: change.commit_timestamp,
      record: change.record,
      old_record: fullOld ? change.old_record : keyOnly,
    });
    const events = new Map<string, ServerEvent>();
    entries.forEach((group, i) => {
      if (!visible[i]) return;
      const fullOld = change.type === "UPDATE" && oldVisible[i] === true;
      for (const { conn, channels } of group) {
        for (const channel of channels) {
          const cacheKey = `${fullOld ? "full" : "key"}:${channel}`;
          let event = events.get(cacheKey);
          if (!event) {
            event = { kind: "postgres_changes", channel, change: payloadOf(fullOld), row, cache: new Map() };
            events.set(cacheKey, event);
          }
          this.options.deliver(conn, event);
          this.delivered++;
        }
      }
    });
  }
}

/** A member with a presence key sees the channel's presence, unless its policies deny it. */
function seesPresence(sub: Subscription | undefined): boolean {
  return sub?.presenceKey !== undefined && sub.presenceKey !== "" && (sub.access?.presenceRead ?? true);
}

function setAdd<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, set = new Set());
  set.add(value);
}

function setDelete<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
