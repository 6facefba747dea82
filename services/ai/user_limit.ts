import type { Queryable } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { SharedRateLimit } from "../limits/rate_limit.ts";

/** Options of a {@linkcode UserLimit}. */
export interface UserLimitOptions {
  /** Calls per project and caller per UTC minute across every instance; 0 for no limit. */
  perMinute: number;
  /** The scope of its counts in the shared table, and its name in the log. */
  scope: string;
  /** What is counted, in the refusal's words ("AI calls"). */
  what: string;
  /** How often the counts are added to the shared ones (ms); tests flush by hand. */
  flushMs?: number;
}

/**
 * UserLimit caps the AI calls of each caller (a signed-in user, or a client address) per project and UTC
 * minute, across every instance that shares the control database ({@linkcode SharedRateLimit}), so that one
 * user of a project cannot spend the project's provider quota. service_role and admin are not limited; anon
 * goes through budgeted session tickets.
 */
export class UserLimit {
  private readonly shared: SharedRateLimit | null;

  constructor(control: Queryable, private readonly options: UserLimitOptions) {
    this.shared = options.perMinute > 0
      ? new SharedRateLimit(control, {
        perMinute: options.perMinute,
        name: options.scope,
        flushMs: options.flushMs,
      })
      : null;
  }

  /** Counts one call of `user` in `project`; 429 rate_limit_exceeded with Retry-After past the limit. */
  take(project: string, user: string, now = Date.now()): void {
    const taken = this.shared?.take(`${this.options.scope}:${project}\u0000${user}`, now);
    if (taken && !taken.ok) {
      throw errors.rateLimited(
        `Too many ${this.options.what}: at most ${this.options.perMinute} a minute`,
        taken.retryAfterSeconds,
      );
    }
  }

  /** Adds this instance's counts to the shared ones. */
  async flush(): Promise<void> {
    await this.shared?.flush();
  }

  /** Stops the timer and stores what is pending. */
  async close(): Promise<void> {
    await this.shared?.close();
  }
}
