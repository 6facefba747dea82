/** Console lines a function may write per second, sustained; LOG_BURST more may come at once. */
export const LOG_LINES_PER_SECOND = 1_000;
/** The most console lines a function may write at once, after a quiet while. */
export const LOG_BURST = 2_000;
/** Dropped lines are reported at most this often while a flood goes on (and when a call ends). */
const REPORT_MS = 1_000;

/**
 * LogBudget is a token bucket of console lines: a function that logs faster than its budget has the surplus
 * counted instead of sent, so that a log flood costs the platform (which parses every line it is sent) little.
 */
export class LogBudget {
  private tokens: number;
  private at: number;
  private refused = 0;
  private reportedAt = -Infinity;

  constructor(
    private readonly perSecond = LOG_LINES_PER_SECOND,
    private readonly burst = LOG_BURST,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  /** Takes one line's token; false when the line is to be dropped (it is counted). */
  take(): boolean {
    const t = this.now();
    // No Math.min: in a worker, the function's code could replace it.
    const refilled = this.tokens + (t - this.at) * this.perSecond / 1000;
    this.tokens = refilled > this.burst ? this.burst : refilled;
    this.at = t;
    if (this.tokens < 1) {
      this.refused++;
      return false;
    }
    this.tokens -= 1;
    return true;
  }

  /**
   * The lines dropped since the last report, when they are to be reported now (`force`, or a report is due);
   * otherwise 0. Reporting them starts the count again.
   */
  report(force = false): number {
    if (this.refused === 0) return 0;
    const t = this.now();
    if (!force && t - this.reportedAt < REPORT_MS) return 0;
    this.reportedAt = t;
    const count = this.refused;
    this.refused = 0;
    return count;
  }
}

/** The line that stands for `count` dropped lines. */
export function droppedLinesText(count: number): string {
  return `${count} log lines dropped: a function may write ${LOG_LINES_PER_SECOND} lines a second ` +
    `(bursts of ${LOG_BURST})`;
}
