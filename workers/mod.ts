import { describeError, log } from "../lib/log.ts";
import type { Platform } from "../services/platform.ts";
import { startCronTicker } from "./cron_ticker.ts";
import { QueueDispatcher } from "./queue.ts";

/** The background workers of one process. */
export interface Workers {
  dispatcher: QueueDispatcher;
  /** Stops every loop and waits for the work in flight; KV and databases stay open. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startWorkers}. */
export interface WorkerOptions {
  /**
   * Milliseconds between sweeps for expired leases and overdue notifications (default NOTIFY_SWEEP_SECS; 0
   * disables the periodic sweeper).
   */
  sweepEveryMs?: number;
  /** Milliseconds between sweeps for expired job leases and overdue jobs (default JOBS_SWEEP_SECS; 0 disables). */
  jobSweepEveryMs?: number;
}

/**
 * Starts the single KV queue dispatcher with every area's handlers, and the sweeper that retries
 * notifications whose send was lost with its process (lease expired) or whose queue message was lost. Called
 * by main.ts and by the test harness.
 */
export function startWorkers(platform: Platform, options: WorkerOptions = {}): Workers {
  const dispatcher = new QueueDispatcher(platform.kv)
    .on("notification.send", (m) => platform.notifications.deliver(m))
    .on("job.run", (m) => platform.jobs.deliver(m));
  dispatcher.start();
  void platform.notifications.setDispatching(true);
  void platform.jobs.setDispatching(true);
  const jobs = startJobSweeper(platform, options.jobSweepEveryMs ?? platform.config.JOBS_SWEEP_SECS * 1000);
  const cron = startCronTicker(platform);
  const sweep = (graceSecs: number) =>
    (async () => {
      for (const project of await platform.projects.list()) {
        await platform.notifications.sweep(project.ref, graceSecs).catch((err) =>
          log.warn("notification sweep failed", { project: project.ref, cause: describeError(err) })
        );
      }
    })().catch((err) => log.warn("notification sweep failed", { cause: describeError(err) }));
  // At start, whatever is due is re-enqueued at once: a message KV handed to the previous process just before
  // it stopped may otherwise wait for KV's own redelivery deadline.
  let sweeping: Promise<void> = sweep(0);
  const every = options.sweepEveryMs ?? platform.config.NOTIFY_SWEEP_SECS * 1000;
  const timer = every > 0 ? setInterval(() => (sweeping = sweep(120)), every) : undefined;
  return {
    dispatcher,
    async stop() {
      clearInterval(timer);
      await cron.stop();
      await jobs.stop();
      await Promise.all([platform.notifications.setDispatching(false), platform.jobs.setDispatching(false)]);
      await sweeping;
      await dispatcher.stop();
    },
  };
}

/**
 * Starts the job sweeper: at once (so a restart resumes every pending job and takes over attempts whose
 * process died, when their lease has expired), then every `everyMs`.
 */
function startJobSweeper(platform: Platform, everyMs: number): { stop(): Promise<void> } {
  const sweep = (graceSecs: number) =>
    (async () => {
      for (const project of await platform.projects.list()) {
        await platform.jobs.sweep(project.ref, graceSecs).catch((err) =>
          log.warn("job sweep failed", { project: project.ref, cause: describeError(err) })
        );
      }
    })().catch((err) => log.warn("job sweep failed", { cause: describeError(err) }));
  let sweeping: Promise<void> = sweep(0);
  // Later sweeps leave a few seconds to the queue message of a job that just became due.
  const timer = everyMs > 0 ? setInterval(() => (sweeping = sweep(5)), everyMs) : undefined;
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
