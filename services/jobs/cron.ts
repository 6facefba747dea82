import type { Databases } from "../../db/databases.ts";
import { errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import {
  type CronRow,
  deleteCron,
  type DueCron,
  dueCron,
  fireCronTick,
  listCron,
  upsertCron,
} from "./store.ts";
import { nextRun, normalizeSchedule } from "./schedule.ts";
import type { JobService } from "./service.ts";

/** The body of POST /v1/functions/cron. */
export interface CronInput {
  name: string;
  schedule: string;
  function_name: string;
  payload?: unknown;
  is_active?: boolean;
}

/** A cron entry as the API returns it (docs/jobs.md), times in ISO 8601. */
export interface CronObject {
  id: string;
  project_id: string;
  name: string;
  schedule: string;
  function_name: string;
  payload: unknown;
  is_active: boolean;
  last_run: string | null;
  next_run: string | null;
  created_at: string;
}

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

function cronView(ref: string, row: CronRow): CronObject {
  return {
    id: row.id,
    project_id: ref,
    name: row.name,
    schedule: row.schedule,
    function_name: row.function_name,
    payload: row.payload ?? null,
    is_active: row.is_active,
    last_run: iso(row.last_run),
    next_run: iso(row.next_run),
    created_at: iso(row.created_at)!,
  };
}

/** Attempts of a cron job (each tick's job retries like any job, then lands in the DLQ). */
const CRON_JOB_ATTEMPTS = 3;

/**
 * CronService stores cron entries (schedules normalized to 6 fields, UTC) and fires due ticks. A tick is
 * claimed by an atomic compare-and-set of `next_run` in the project database, and its job is inserted in the
 * same transaction under a unique (entry, tick) key: exactly one job per tick however many processes fire it.
 * After downtime the one stored `next_run` is fired once and the next run is computed from now, so missed
 * ticks are not replayed one by one.
 */
export class CronService {
  constructor(private readonly dbs: Databases, private readonly jobs: JobService) {}

  /** Creates or updates (by name) an entry; `created` tells which. */
  async upsert(ref: string, input: CronInput): Promise<{ entry: CronObject; created: boolean }> {
    const schedule = normalizeSchedule(input.schedule);
    this.jobs.checkPayload(input.payload);
    const db = await this.dbs.project(ref);
    const { row, created } = await upsertCron(db, {
      name: input.name,
      schedule,
      functionName: input.function_name,
      payload: input.payload,
      isActive: input.is_active ?? true,
      nextRun: nextRun(schedule, new Date()),
    });
    return { entry: cronView(ref, row), created };
  }

  /** Every entry of the project. */
  async list(ref: string): Promise<CronObject[]> {
    return (await listCron(await this.dbs.project(ref))).map((row) => cronView(ref, row));
  }

  /** Deletes an entry by name (404 when unknown); it stops firing at once. */
  async delete(ref: string, name: string): Promise<void> {
    if (!await deleteCron(await this.dbs.project(ref), name)) {
      throw errors.notFound(`Cron entry "${name}" does not exist`);
    }
  }

  /** Fires every due tick of a project; returns the number of jobs this process created. */
  async fireDue(ref: string): Promise<number> {
    const db = await this.dbs.project(ref);
    let fired = 0;
    for (const entry of await dueCron(db, 500)) {
      try {
        if (await this.fire(ref, entry)) fired++;
      } catch (err) {
        log.warn("cron tick failed", { project: ref, cron: entry.name, cause: describeError(err) });
      }
    }
    return fired;
  }

  private async fire(ref: string, entry: DueCron): Promise<boolean> {
    const tick = new Date(entry.next_run!);
    const next = nextRun(entry.schedule, new Date(Math.max(Date.now(), tick.getTime())));
    const db = await this.dbs.project(ref);
    const job = await fireCronTick(db, entry, next, {
      functionName: entry.function_name,
      payload: entry.payload,
      maxAttempts: CRON_JOB_ATTEMPTS,
      delaySecs: 0,
    });
    if (!job) return false; // another process took this tick
    await this.jobs.enqueueRun(ref, job.id, 0);
    return true;
  }
}
