import type { Routes, Schemas } from "./api_types.ts";
import type { Http } from "./http.ts";

/** An alert rule on a metric of the project's functions and jobs. */
export type Alert = Schemas["Alert"];
/** A trigger or resolution of an alert. */
export type AlertEvent = Schemas["AlertEvent"];
type Page = { limit?: number; offset?: number };

/** AlertsClient manages alerts on the project's metrics and reads their events. */
export class AlertsClient {
  constructor(private readonly http: Http) {}

  /** Creates an alert, or updates the one of that name. */
  create(alert: Routes["POST /v1/functions/alerts"]["body"]): Promise<Alert> {
    return this.http.call("POST /v1/functions/alerts", { body: alert });
  }

  /** Every alert, by name. */
  list(): Promise<Alert[]> {
    return this.http.call("GET /v1/functions/alerts");
  }

  /** Changes `enabled`, `threshold`, `window_secs`, `cooldown_secs` or `destination`. */
  update(id: string, patch: Routes["PATCH /v1/functions/alerts/{id}"]["body"]): Promise<Alert> {
    return this.http.call("PATCH /v1/functions/alerts/{id}", { params: { id }, body: patch });
  }

  /** Turns an alert on or off. */
  setEnabled(id: string, enabled: boolean): Promise<Alert> {
    return this.update(id, { enabled });
  }

  /** Deletes an alert and its events. */
  async delete(id: string): Promise<void> {
    await this.http.call("DELETE /v1/functions/alerts/{id}", { params: { id } });
  }

  /** The events of one alert, newest first. */
  events(id: string, page: Page = {}): Promise<AlertEvent[]> {
    return this.http.call("GET /v1/functions/alerts/{id}/events", { params: { id }, query: page });
  }

  /** The events of every alert, newest first. */
  allEvents(page: Page = {}): Promise<AlertEvent[]> {
    return this.http.call("GET /v1/functions/alerts/events", { query: page });
  }

  /** The current value of every metric over a window, for the project or one function. */
  metrics(query: Routes["GET /v1/functions/metrics"]["query"] = {}): Promise<Schemas["Metrics"]> {
    return this.http.call("GET /v1/functions/metrics", { query });
  }
}
