import type { Routes, Schemas } from "./api_types.ts";
import type { Http } from "./http.ts";

/** A background job. */
export type Job = Schemas["Job"];

/** JobsClient enqueues function calls to run in the background and manages them and the dead-letter queue. */
export class JobsClient {
  constructor(private readonly http: Http) {}

  /** Enqueues a call of `function_name` with `payload`, after `delay_secs`, tried up to `max_attempts` times. */
  enqueue(job: Routes["POST /v1/functions/jobs"]["body"]): Promise<Job> {
    return this.http.call("POST /v1/functions/jobs", { body: job });
  }

  /** Jobs, newest first, by `status` when given. */
  list(query: Routes["GET /v1/functions/jobs"]["query"] = {}): Promise<Job[]> {
    return this.http.call("GET /v1/functions/jobs", { query });
  }

  /** One job. */
  get(id: string): Promise<Job> {
    return this.http.call("GET /v1/functions/jobs/{id}", { params: { id } });
  }

  /** Puts a job back to `pending` with its attempts reset (not while it runs). */
  retry(id: string): Promise<Job> {
    return this.http.call("POST /v1/functions/jobs/{id}/retry", { params: { id } });
  }

  /** The dead jobs, newest first. */
  listDeadLetters(query: Routes["GET /v1/functions/jobs/dlq"]["query"] = {}): Promise<Job[]> {
    return this.http.call("GET /v1/functions/jobs/dlq", { query });
  }

  /** Puts every dead job back to `pending`; resolves to how many. */
  requeueDeadLetters(): Promise<{ requeued: number }> {
    return this.http.call("POST /v1/functions/jobs/dlq/requeue");
  }
}
