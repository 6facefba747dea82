import { describeError, log } from "../lib/log.ts";
import type { Platform } from "../services/platform.ts";

/** Options of {@linkcode startCronTicker}. */
export interface CronTickerOptions {
  /** How long the project list is reused before it is read again, in milliseconds. */
  projectsTtlMs?: number;
}

/** A running cron ticker. */
export interface CronTicker {
  /** Stops ticking and waits for the round in flight. */
  stop(): Promise<void>;
}

/**
 * Starts the cron ticker: just after each whole second it fires the due ticks of every project. The state of
 * record is each entry's `next_run` in its project database, claimed atomically, so any number of processes
 * may tick side by side and a tick still makes one job; a round that overruns the second skips the next start.
 */
export function startCronTicker(platform: Platform, options: CronTickerOptions = {}): CronTicker {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let round: Promise<void> = Promise.resolve();
  let projects: string[] = [];
  let projectsAt = 0;
  const ttl = options.projectsTtlMs ?? 5_000;

  const tick = async () => {
    if (Date.now() - projectsAt > ttl) {
      projects = (await platform.projects.list()).map((p) => p.ref);
      projectsAt = Date.now();
    }
    for (const ref of projects) {
      if (stopped) return;
      // A resting project database has no tick due yet (it read its next one as it closed).
      if (platform.dbs.resting(ref)) continue;
      await platform.dbs.inBackground(() => platform.cron.fireDue(ref)).catch((err) =>
        log.warn("cron round failed", { project: ref, cause: describeError(err) })
      );
    }
  };
  const arm = () => {
    if (stopped) return;
    // 5 ms past the next whole second: ticks of a per-second schedule are due by then.
    timer = setTimeout(() => {
      round = tick().catch((err) => log.warn("cron round failed", { cause: describeError(err) })).finally(
        arm,
      );
    }, 1000 - (Date.now() % 1000) + 5);
  };
  arm();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
    },
  };
}
