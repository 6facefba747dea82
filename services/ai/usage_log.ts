import type { Databases } from "../../db/databases.ts";
import { describeError, log } from "../../lib/log.ts";
import type { Usage } from "./providers.ts";
import { usageStore } from "./store.ts";

/** One call to count. */
export interface UsageEntry {
  provider: string;
  model: string;
  kind: "chat" | "embeddings" | "rag" | "nl2sql";
  usage: Usage;
  cacheHit?: boolean;
}

/** A day of usage for one provider, model and kind. */
export interface UsageRow {
  day: string;
  provider: string;
  model: string;
  kind: string;
  requests: number;
  cache_hits: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/**
 * UsageLog records token usage per project (in its database, one row per day, provider, model and kind).
 * Recording is off the request's path: a failure is logged and never fails the call it counts.
 */
export class UsageLog {
  private pending = new Set<Promise<void>>();

  constructor(private readonly dbs: Databases) {}

  /** Adds `entry` to the project's counters, in the background. */
  record(ref: string, entry: UsageEntry): void {
    const p = this.write(ref, entry).catch((err) => {
      log.warn("ai usage not recorded", { project: ref, cause: describeError(err) });
    }).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private async write(ref: string, e: UsageEntry): Promise<void> {
    const db = await this.dbs.project(ref);
    await usageStore.add(db, e);
  }

  /** Waits for the writes in flight (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** The project's usage of the last `days` days, newest first. */
  async list(ref: string, days: number): Promise<UsageRow[]> {
    const db = await this.dbs.project(ref);
    const rows = await usageStore.list(db, days);
    return rows.map((r) => ({
      day: String(r.day),
      provider: String(r.provider),
      model: String(r.model),
      kind: String(r.kind),
      requests: Number(r.requests),
      cache_hits: Number(r.cache_hits),
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      total_tokens: Number(r.total_tokens),
    }));
  }
}
