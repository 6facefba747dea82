import { errors } from "../../lib/errors.ts";

/**
 * UserLimit caps the AI calls of each signed-in user per project and minute (`AI_USER_RATE_PER_MIN`), in a
 * fixed window kept in memory, so that one user of a project cannot spend the project's provider quota.
 * service_role and admin are not limited; anon goes through budgeted session tickets.
 */
export class UserLimit {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly perMinute: number, private readonly what = "AI calls") {}

  /** Counts one call of `user` in `project`; 429 rate_limit_exceeded with Retry-After past the limit. */
  take(project: string, user: string, now = Date.now()): void {
    if (this.perMinute <= 0) return;
    const key = `${project}\u0000${user}`;
    let w = this.windows.get(key);
    if (!w || now - w.start >= 60_000) {
      if (this.windows.size > 100_000) this.sweep(now);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    if (w.count >= this.perMinute) {
      const retry = Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
      throw errors.rateLimited(`Too many ${this.what}: at most ${this.perMinute} a minute`, retry);
    }
    w.count++;
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(k);
  }
}
