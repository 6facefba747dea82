import type { Routes } from "./api_types.ts";
import type { Http } from "./http.ts";
import type {
  Channel,
  Notification,
  NotificationEvent,
  NotificationRule,
  NotificationTemplate,
  SendOptions,
  TemplatePreview,
} from "./notification_types.ts";

/** The notification routes answer plain objects in the OpenAPI document; the client gives their types. */
const typed = <T>(answer: Promise<unknown>) => answer as Promise<T>;
type Body<R extends keyof Routes> = Routes[R]["body"];
type Query<R extends keyof Routes> = Routes[R]["query"];
/** One send request of `sendBatch`: the wire body of a send. */
export type SendRequest = Body<"POST /v1/notifications/send">;
/** What `sendBatch` resolves to: one result per request, by index. */
export interface BatchResult {
  results: { index: number; notification?: Notification; error?: { code: string; message: string } }[];
}

/**
 * NotificationsClient sends email, SMS, push and webhook notifications and manages templates; `admin` holds
 * settings, statistics, the queue, attempts, dead letters, rules-engine events and rules, provider logs and
 * template previews. Secret key only.
 */
export class NotificationsClient {
  /** The operations of the notifications console. */
  readonly admin: NotificationsAdmin;

  constructor(private readonly http: Http) {
    this.admin = new NotificationsAdmin(http);
  }

  /** Queues a notification on `channel` to `recipient`. */
  send(channel: Channel, recipient: string, body?: string, options: SendOptions = {}): Promise<Notification> {
    return this.#send({ channel, recipient, body, ...options });
  }

  /** Queues up to 1000 sends at once; each gets its notification or its error. */
  sendBatch(requests: SendRequest[]): Promise<BatchResult> {
    return typed<BatchResult>(this.http.call("POST /v1/notifications/send/batch", { body: { requests } }));
  }

  /** Sends an email. */
  sendEmail(to: string, subject: string, body?: string, options: SendOptions = {}): Promise<Notification> {
    return this.#send({ channel: "email", recipient: to, subject, body, ...options });
  }

  /** Sends an SMS to an E.164 number. */
  sendSms(to: string, body?: string, options: SendOptions = {}): Promise<Notification> {
    return this.#send({ channel: "sms", recipient: to, body, ...options });
  }

  /** Sends a push notification to a device token (`fcm:` or `apns:` prefix). */
  sendPush(token: string, title: string, body?: string, options: SendOptions = {}): Promise<Notification> {
    return this.#send({ channel: "push", recipient: token, subject: title, body, ...options });
  }

  /** POSTs a signed webhook (Standard Webhooks) with `event` and `payload` to `url`. */
  sendWebhook(
    url: string,
    event: string,
    payload: string | Record<string, unknown>,
    options: SendOptions = {},
  ): Promise<Notification> {
    return this.#send({ channel: "webhook", recipient: url, event, payload, ...options });
  }

  /** Queues a `failed` or `dead_lettered` notification again. */
  retry(id: string): Promise<Notification> {
    return typed<Notification>(this.http.call("POST /v1/notifications/{id}/retry", { params: { id } }));
  }

  /** Notifications by channel, status or text, sorted and paged. */
  list(filters: Query<"GET /v1/notifications"> = {}): Promise<Notification[]> {
    return typed<Notification[]>(this.http.call("GET /v1/notifications", { query: filters }));
  }

  /** One notification. */
  get(id: string): Promise<Notification> {
    return typed<Notification>(this.http.call("GET /v1/notifications/{id}", { params: { id } }));
  }

  /** Every template, by name. */
  listTemplates(): Promise<NotificationTemplate[]> {
    return typed<NotificationTemplate[]>(this.http.call("GET /v1/notifications/templates"));
  }

  /** One template. */
  getTemplate(id: string): Promise<NotificationTemplate> {
    return typed<NotificationTemplate>(
      this.http.call("GET /v1/notifications/templates/{id}", { params: { id } }),
    );
  }

  /** Creates a template from exactly `name`, `channel`, `subject` and `body`. */
  createTemplate(template: Body<"POST /v1/notifications/templates">): Promise<NotificationTemplate> {
    return typed<NotificationTemplate>(
      this.http.call("POST /v1/notifications/templates", { body: template }),
    );
  }

  /** Changes a template's `name`, `subject` or `body`. */
  updateTemplate(
    id: string,
    patch: Body<"PATCH /v1/notifications/templates/{id}">,
  ): Promise<NotificationTemplate> {
    return typed<NotificationTemplate>(
      this.http.call("PATCH /v1/notifications/templates/{id}", { params: { id }, body: patch }),
    );
  }

  /** Deletes a template; resolves to null. */
  deleteTemplate(id: string): Promise<null> {
    return this.http.call("DELETE /v1/notifications/templates/{id}", { params: { id } });
  }

  #send(body: SendRequest): Promise<Notification> {
    return typed<Notification>(this.http.call("POST /v1/notifications/send", { body }));
  }
}

/** The administrative operations of notifications (`client.notifications.admin`). */
export class NotificationsAdmin {
  constructor(private readonly http: Http) {}

  /** The provider settings, secrets shown only as `*_set: true`. */
  getSettings(): Promise<Record<string, unknown>> {
    return this.http.call("GET /v1/notifications/settings");
  }

  /** Changes settings field by field; resolves to the public settings. */
  updateSettings(patch: Body<"PATCH /v1/notifications/settings">): Promise<Record<string, unknown>> {
    return this.http.call("PATCH /v1/notifications/settings", { body: patch });
  }

  /** Counts by status and channel, success rate and latency over a window. */
  getStats(query: Query<"GET /v1/notifications/stats"> = {}): Promise<Record<string, unknown>> {
    return this.http.call("GET /v1/notifications/stats", { query });
  }

  /** Depth and distribution of the pending notifications. */
  getQueue(): Promise<Record<string, unknown>> {
    return this.http.call("GET /v1/notifications/queue");
  }

  /** The attempts of a notification, with each provider answer. */
  listAttempts(id: string): Promise<Record<string, unknown>[]> {
    return typed<Record<string, unknown>[]>(
      this.http.call("GET /v1/notifications/{id}/attempts", { params: { id } }),
    );
  }

  /** The dead-lettered notifications. */
  listDeadLetters(query: Query<"GET /v1/notifications/dead-letters"> = {}): Promise<Notification[]> {
    return typed<Notification[]>(this.http.call("GET /v1/notifications/dead-letters", { query }));
  }

  /** Queues a dead-lettered notification again. */
  retryDeadLetter(id: string): Promise<Notification> {
    return typed<Notification>(
      this.http.call("POST /v1/notifications/dead-letters/{id}/retry", { params: { id } }),
    );
  }

  /** The events the rules engine received. */
  listEvents(query: Query<"GET /v1/notifications/events"> = {}): Promise<NotificationEvent[]> {
    return typed<NotificationEvent[]>(this.http.call("GET /v1/notifications/events", { query }));
  }

  /** Every call to a provider and every receipt. */
  listProviderLogs(
    query: Query<"GET /v1/notifications/providers/logs"> = {},
  ): Promise<Record<string, unknown>[]> {
    return typed<Record<string, unknown>[]>(
      this.http.call("GET /v1/notifications/providers/logs", { query }),
    );
  }

  /** Renders a template with `variables`; nothing is sent. */
  previewTemplate(id: string, variables: Record<string, unknown> = {}): Promise<TemplatePreview> {
    return typed<TemplatePreview>(this.http.call("POST /v1/notifications/templates/{id}/preview", {
      params: { id },
      body: { variables },
    }));
  }

  /** Every rule, newest first. */
  listRules(): Promise<NotificationRule[]> {
    return typed<NotificationRule[]>(this.http.call("GET /v1/notifications/rules"));
  }

  /** Creates a rule; its CEL expressions are checked (400 when they do not). */
  createRule(rule: Body<"POST /v1/notifications/rules">): Promise<NotificationRule> {
    return typed<NotificationRule>(this.http.call("POST /v1/notifications/rules", { body: rule }));
  }

  /** One rule. */
  getRule(id: string): Promise<NotificationRule> {
    return typed<NotificationRule>(this.http.call("GET /v1/notifications/rules/{id}", { params: { id } }));
  }

  /** Changes the fields given. */
  updateRule(id: string, patch: Body<"PATCH /v1/notifications/rules/{id}">): Promise<NotificationRule> {
    return typed<NotificationRule>(
      this.http.call("PATCH /v1/notifications/rules/{id}", { params: { id }, body: patch }),
    );
  }

  /** Deletes a rule; resolves to null. */
  deleteRule(id: string): Promise<null> {
    return this.http.call("DELETE /v1/notifications/rules/{id}", { params: { id } });
  }
}
