import { describeError, log } from "../lib/log.ts";
import type { Platform } from "../services/platform.ts";

/** Options of {@linkcode startAlertEvaluator}. */
export interface AlertEvaluatorOptions {
  /** How long the project list is reused before it is read again, in milliseconds. */
  projectsTtlMs?: number;
}

/** A running alert evaluator. */
export interface AlertEvaluator {
  /** Stops ticking and waits for the round in flight. */
  stop(): Promise<void>;
}

/**
 * Starts the alert evaluator: just after each ALERTS_EVAL_SECS boundary it evaluates the enabled alerts of
 * every project for that tick. Like the cron ticker, and unlike the work queue's one-shot items, the state of
 * record is each alert's row: a tick takes an alert with a conditional update in its project database, so any
 * number of processes may tick side by side and each alert is still evaluated once per tick. A round that
 * overruns its period skips the ticks it missed.
 */
export function startAlertEvaluator(platform: Platform, options: AlertEvaluatorOptions = {}): AlertEvaluator {
  const periodMs = platform.config.ALERTS_EVAL_SECS * 1000;
  const ttl = options.projectsTtlMs ?? 5_000;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let round: Promise<void> = Promise.resolve();
  let projects: string[] = [];
  let projectsAt = 0;

  const tick = async () => {
    const now = Date.now();
    if (now - projectsAt > ttl) {
      projects = (await platform.projects.list()).map((p) => p.ref);
      projectsAt = now;
    }
    const tick = platform.alerts.tickAt(now);
    for (const ref of projects) {
      if (stopped) return;
      if (platform.dbs.resting(ref)) continue; // no enabled alert in it (it would not rest)
      await platform.dbs.inBackground(() => platform.alerts.evaluate(ref, tick)).catch((err) =>
        log.warn("alert round failed", { project: ref, cause: describeError(err) })
      );
    }
  };
  const arm = () => {
    if (stopped) return;
    // 5 ms past the next boundary, so that the tick computed then is the new one.
    timer = setTimeout(() => {
      round = tick().catch((err) => log.warn("alert round failed", { cause: describeError(err) })).finally(
        arm,
      );
    }, periodMs - (Date.now() % periodMs) + 5);
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
