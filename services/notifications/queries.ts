import type { Channel } from "./providers/provider.ts";
import { type queueRows, type statsRows, type Status, STATUSES } from "./store.ts";

/** Shapes the figures the store reads for the stats and the queue depth (no SQL here). */

const CHANNELS: Channel[] = ["email", "sms", "push", "webhook"];
const ALL_STATUSES: Status[] = [...STATUSES];

function zeros<K extends string>(keys: K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

/** The stats windows. */
export const WINDOWS = { "1h": "1 hour", "24h": "24 hours", "7d": "7 days", "30d": "30 days" } as const;

/** Shapes the stats: counts by status and channel over a window, attempts, success rate and queued-to-sent latency. */
export function stats(
  raw: Awaited<ReturnType<typeof statsRows>>,
  window: keyof typeof WINDOWS,
  channel?: Channel,
) {
  const { counts, latency, attempts } = raw;
  const byStatus = zeros(ALL_STATUSES);
  const byChannel = Object.fromEntries(
    CHANNELS.map((c) => [c, { total: 0, ...zeros(ALL_STATUSES) }]),
  ) as Record<Channel, Record<Status | "total", number>>;
  let total = 0;
  for (const r of counts) {
    const n = Number(r.n);
    total += n;
    byStatus[r.status] += n;
    byChannel[r.channel][r.status] += n;
    byChannel[r.channel].total += n;
  }
  const delivered = byStatus.sent + byStatus.delivered;
  const finished = delivered + byStatus.dead_lettered;
  const round = (v: number | null | undefined) =>
    v === null || v === undefined ? null : Math.round(Number(v));
  return {
    window,
    channel: channel ?? null,
    total,
    by_status: byStatus,
    by_channel: channel ? { [channel]: byChannel[channel] } : byChannel,
    attempts: { total: Number(attempts?.total ?? 0), successful: Number(attempts?.ok ?? 0) },
    success_rate: finished > 0 ? delivered / finished : null,
    queued_to_sent_ms: { p50: round(latency?.p50), p95: round(latency?.p95), avg: round(latency?.avg) },
  };
}

/** Shapes the queue depth: notifications not yet finished, by status and channel, with the oldest waiting one. */
export function queueDepth({ rows, oldest }: Awaited<ReturnType<typeof queueRows>>) {
  const byStatus = { queued: 0, sending: 0, failed: 0 };
  const byChannel = zeros(CHANNELS);
  let depth = 0;
  let scheduled = 0;
  for (const r of rows) {
    const n = Number(r.n);
    depth += n;
    scheduled += Number(r.scheduled);
    byStatus[r.status as keyof typeof byStatus] += n;
    byChannel[r.channel] += n;
  }
  return {
    depth,
    by_status: byStatus,
    by_channel: byChannel,
    scheduled,
    ready: depth - scheduled,
    oldest_queued_at: oldest?.at ?? null,
  };
}
