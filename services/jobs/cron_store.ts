import type { Queryable } from "../../db/driver.ts";

/** A cron entry row. */
export interface CronRow {
  id: string;
  name: string;
  schedule: string;
  function_name: string;
  payload: unknown;
  is_active: boolean;
  last_run: Date | null;
  next_run: Date | null;
  created_at: Date;
}

const COLUMNS = "id, name, schedule, function_name, payload, is_active, last_run, next_run, created_at";

/** What POST /v1/functions/cron writes. */
export interface CronWrite {
  name: string;
  schedule: string;
  functionName: string;
  payload: unknown;
  isActive: boolean;
  nextRun: Date | null;
}

/** Creates the entry or updates the one of that name (`created` tells which). */
export async function upsertCron(db: Queryable, w: CronWrite): Promise<{ row: CronRow; created: boolean }> {
  const [row] = await db.query<CronRow & { created: boolean }>(
    `insert into platform.cron_entries (name, schedule, function_name, payload, is_active, next_run)
     values ($1, $2, $3, $4::text::jsonb, $5, $6)
     on conflict (name) do update set schedule = excluded.schedule, function_name = excluded.function_name,
       payload = excluded.payload, is_active = excluded.is_active, next_run = excluded.next_run,
       updated_at = now()
     returning ${COLUMNS}, (xmax = 0) as created`,
    [
      w.name,
      w.schedule,
      w.functionName,
      w.payload === undefined || w.payload === null ? null : JSON.stringify(w.payload),
      w.isActive,
      w.nextRun,
    ],
  );
  const { created, ...entry } = row!;
  return { row: entry, created };
}

/** Every entry by name. */
export async function listCron(db: Queryable): Promise<CronRow[]> {
  return await db.query<CronRow>(`select ${COLUMNS} from platform.cron_entries order by name`);
}

/** Deletes an entry; false when there is none of that name. */
export async function deleteCron(db: Queryable, name: string): Promise<boolean> {
  return (await db.query(`delete from platform.cron_entries where name = $1 returning id`, [name])).length >
    0;
}

/** A due entry, with its `next_run` exactly as stored (microseconds included) for the claim. */
export interface DueCron extends CronRow {
  tick: string;
}

/** Active entries whose next run is due. */
export async function dueCron(db: Queryable, limit: number): Promise<DueCron[]> {
  return await db.query<DueCron>(
    `select ${COLUMNS}, next_run::text as tick from platform.cron_entries where is_active and next_run <= now()
     order by next_run limit $1`,
    [limit],
  );
}

/**
 * Claims one tick of an entry: moves `next_run` from the tick to `next` only if it still is the tick (an atomic
 * compare-and-set, so one process wins however many fire it). Null when another process already took it, or
 * the entry was changed, deactivated or deleted meanwhile. `tick` is the stored text: passed as text, not as
 * a timestamp parameter (postgres.js would round it through a JS Date and drop the microseconds).
 */
export async function claimTick(
  db: Queryable,
  id: string,
  tick: string,
  next: Date | null,
): Promise<CronRow | null> {
  const [row] = await db.query<CronRow>(
    `update platform.cron_entries set next_run = $3, last_run = now()
     where id = $1 and is_active and next_run = $2::text::timestamptz
     returning ${COLUMNS}`,
    [id, tick, next],
  );
  return row ?? null;
}
