import type { Databases } from "../../db/databases.ts";
import { authStore } from "./store.ts";
import { ACCESS_TOKEN_SECONDS } from "./tokens.ts";

/** How stale a process's list of revoked sessions may be: a revocation made elsewhere takes effect within it. */
export const REVOCATION_CHECK_MS = 3_000;

// Each read starts a little before the previous one: a revoking transaction that stamped revoked_at before
// that read but committed after it is still seen.
const OVERLAP_MS = 60_000;
// A session is remembered past the lifetime of the last access token it can have had (a revoked session issues
// none), plus five minutes for clock skew.
const KEEP_MS = (ACCESS_TOKEN_SECONDS + 300) * 1000;

/** What this process knows of one project's revoked sessions. */
interface ProjectRevocations {
  /** Revoked session id → when this process learned of it. */
  ids: Map<string, number>;
  /** When the last read began (0: never); the list is fresh for REVOCATION_CHECK_MS after it. */
  readAt: number;
  /** Database time (epoch ms) from which the next read looks. */
  since: number;
  reading?: Promise<void>;
}

/**
 * RevokedSessions tells whether a user session was revoked (sign-out, refresh token reuse), so that its
 * access tokens stop working before they expire. Each process keeps the ids of every project's sessions revoked
 * within the last hour and reads the new ones at most every few seconds, on demand: one small indexed query
 * per project and period however many users call, and none at all for a request between two reads.
 */
export class RevokedSessions {
  private readonly projects = new Map<string, ProjectRevocations>();

  constructor(private readonly dbs: Databases, readonly checkMs = REVOCATION_CHECK_MS) {}

  /** Whether the session is revoked, from a fresh list without any work; undefined when the list is stale. */
  cached(ref: string, sessionId: string): boolean | undefined {
    const p = this.projects.get(ref);
    if (p === undefined || Date.now() - p.readAt >= this.checkMs) return undefined;
    return p.ids.has(sessionId);
  }

  /** Whether the session is revoked, reading the project's new revocations first when the list is stale. */
  async isRevoked(ref: string, sessionId: string): Promise<boolean> {
    const cached = this.cached(ref, sessionId);
    if (cached !== undefined) return cached;
    const p = this.state(ref);
    // Concurrent callers share one read.
    await (p.reading ??= this.read(ref, p).finally(() => {
      p.reading = undefined;
    }));
    return p.ids.has(sessionId);
  }

  /** Records revocations this process made: they take effect here at once, elsewhere at the next read. */
  add(ref: string, sessionIds: string[]): void {
    const p = this.state(ref);
    for (const id of sessionIds) p.ids.set(id, Date.now());
  }

  private state(ref: string): ProjectRevocations {
    let p = this.projects.get(ref);
    if (!p) {
      p = { ids: new Map(), readAt: 0, since: Date.now() - KEEP_MS };
      this.projects.set(ref, p);
    }
    return p;
  }

  private async read(ref: string, p: ProjectRevocations): Promise<void> {
    const startedAt = Date.now();
    const db = await this.dbs.project(ref);
    const revoked = await authStore.revokedSince(db, p.since);
    const now = Date.now();
    for (const id of revoked.ids) if (!p.ids.has(id)) p.ids.set(id, now);
    for (const [id, learnedAt] of p.ids) if (now - learnedAt > KEEP_MS) p.ids.delete(id);
    p.since = revoked.now - OVERLAP_MS;
    p.readAt = startedAt;
  }
}
