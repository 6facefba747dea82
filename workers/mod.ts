import type { Platform } from "../services/platform.ts";
import type { Claimed, Outcome, WorkArea, WorkBus } from "../lib/work_queue.ts";
import { startAlertEvaluator } from "./alert_evaluator.ts";
import { startCronTicker } from "./cron_ticker.ts";
import { WorkEngine } from "./work_queue.ts";
import { WorkPuller } from "./work_pull.ts";
import { describeError, log } from "../lib/log.ts";

/** The background workers of one process. */
export interface Workers {
  engine: WorkEngine;
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
  /** Run the alert evaluator (default true; tests that drive ticks themselves turn it off). */
  alerts?: boolean;
}

/**
 * Starts the work queue engine with its areas (jobs, notifications), the cron ticker and the alert evaluator. Called by main.ts and
 * by the test harness.
 */
export function startWorkers(platform: Platform, options: WorkerOptions = {}): Workers {
  // A sweep leaves resting project databases closed: nothing in them is due yet (db/project_due.ts).
  const projects = async () =>
    (await platform.projects.list()).map((p) => p.ref).filter((ref) => !platform.dbs.resting(ref));
  // A sweep is a periodic check: it does not keep an idle project database open.
  const quiet = <C extends Claimed, O extends Outcome>(area: WorkArea<C, O>): WorkArea<C, O> => ({
    ...area,
    recover: (ref, graceSecs) => platform.dbs.inBackground(() => area.recover(ref, graceSecs)),
  });
  const engine = new WorkEngine(platform.queue, projects)
    // Later sweeps leave a few seconds to the queue message of a job that just became due.
    .register(quiet(platform.jobs.work), {
      everyMs: options.jobSweepEveryMs ?? platform.config.JOBS_SWEEP_SECS * 1000,
      graceSecs: 5,
    })
    .register(quiet(platform.notifications.work), {
      everyMs: options.sweepEveryMs ?? platform.config.NOTIFY_SWEEP_SECS * 1000,
      graceSecs: 120,
    });
  const puller = platform.workBus ? startPuller(platform, platform.workBus, engine) : null;
  engine.start();
  const cron = startCronTicker(platform);
  const alerts = options.alerts === false ? null : startAlertEvaluator(platform);
  return {
    engine,
    async stop() {
      await alerts?.stop();
      await cron.stop();
      await puller?.stop();
      engine.pullWith(null);
      await engine.stop();
    },
  };
}

/**
 * On PostgreSQL, instances share the work of each project's tables: each pulls due jobs and notifications with
 * `FOR UPDATE SKIP LOCKED`, woken by the others' announcements (`NOTIFY` on the control database) and by its
 * sweeps. PGlite is one process by construction, so there the KV messages and the local fast path are all.
 */
function startPuller(platform: Platform, bus: WorkBus, engine: WorkEngine): WorkPuller {
  const puller = new WorkPuller({
    target: engine,
    everyMs: platform.config.WORK_POLL_MS,
    bus,
  });
  engine.pullWith(puller);
  puller.start().catch((err) =>
    log.warn("work announcements not heard; other instances' work is pulled at each sweep", {
      cause: describeError(err),
    })
  );
  return puller;
}
