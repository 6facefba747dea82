import type { JobRow } from "./store.ts";

/** A job as the API returns it (docs/jobs.md), times in ISO 8601. */
export interface JobObject {
  id: string;
  project_id: string;
  function_name: string;
  payload: unknown;
  status: JobRow["status"];
  attempts: number;
  max_attempts: number;
  error: string | null;
  scheduled_at: string;
  started_at: string | null;
  completed_at: string | null;
  created_at: string;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Shapes a stored job for the API. */
export function jobView(ref: string, row: JobRow): JobObject {
  return {
    id: row.id,
    project_id: ref,
    function_name: row.function_name,
    payload: row.payload ?? null,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    error: row.error,
    scheduled_at: iso(row.scheduled_at)!,
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    created_at: iso(row.created_at)!,
  };
}
