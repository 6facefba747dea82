import type { Routes, Schemas } from "./api_types.ts";
import type { Http } from "./http.ts";

/** A cron entry. */
export type CronEntry = Schemas["CronEntry"];

/** CronClient schedules function calls on a cron schedule. */
export class CronClient {
  constructor(private readonly http: Http) {}

  /** Creates or replaces (by name) an entry: `schedule` of 5 or 6 fields or `@hourly`…, in UTC. */
  schedule(entry: Routes["POST /v1/functions/cron"]["body"]): Promise<CronEntry> {
    return this.http.call("POST /v1/functions/cron", { body: entry });
  }

  /** Every entry, by name. */
  list(): Promise<CronEntry[]> {
    return this.http.call("GET /v1/functions/cron");
  }

  /** Removes an entry. */
  async unschedule(name: string): Promise<void> {
    await this.http.call("DELETE /v1/functions/cron/{name}", { params: { name } });
  }
}
