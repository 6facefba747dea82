// The notification resources. The platform's OpenAPI document types their answers as plain objects, so the
// client writes them out here from the API reference; tests/client_notifications_test.ts checks every field
// against the platform's real answers.

/** A delivery channel. */
export type Channel = "email" | "sms" | "push" | "webhook";
/** Where a notification stands. */
export type NotificationStatus =
  | "queued"
  | "sending"
  | "sent"
  | "delivered"
  | "failed"
  | "dead_lettered"
  | "suppressed";

/** A notification, from send, retry, list and get. */
export interface Notification {
  id: string;
  channel: Channel;
  recipient: string;
  subject: string | null;
  body: string | null;
  event: string | null;
  payload: unknown;
  template_id: string | null;
  variables: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  idempotency_key: string | null;
  rule_id: string | null;
  event_id: string | null;
  status: NotificationStatus;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  provider: string | null;
  provider_message_id: string | null;
  scheduled_at: string | null;
  next_attempt_at: string | null;
  queued_at: string | null;
  sending_at: string | null;
  sent_at: string | null;
  delivered_at: string | null;
  failed_at: string | null;
  dead_lettered_at: string | null;
  suppressed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A message template (LiquidJS `{{ variable }}` syntax). */
export interface NotificationTemplate {
  id: string;
  /**
   * The project of the template: part of the resource's definition, but the platform does not return it yet
   * (the client's tests assert that gap, so they fail once it is closed).
   */
  project_id?: string;
  name: string;
  channel: Channel;
  subject: string | null;
  body: string;
  created_at: string;
  updated_at: string;
}

/** A rule of the rules engine: events of `trigger_type` matching `condition` (CEL) send a message. */
export interface NotificationRule {
  id: string;
  name: string;
  trigger_type: string;
  condition: string;
  channel: Channel;
  recipient_expr: string;
  template_id: string | null;
  subject: string | null;
  body: string | null;
  delay_secs: number;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** An event the rules engine received. */
export interface NotificationEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  status: "received" | "matched" | "ignored" | "failed" | "enqueued";
  reason: string | null;
  rule_ids: string[];
  notification_ids: string[];
  received_at: string | null;
  matched_at: string | null;
  ignored_at: string | null;
  enqueued_at: string | null;
  failed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A rendered template preview. */
export interface TemplatePreview {
  template_id: string;
  channel: Channel;
  subject: string | null;
  body: string;
}

/** Options of a send, with the names the platform takes. */
export interface SendOptions {
  subject?: string;
  templateId?: string;
  variables?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  idempotencyKey?: string;
}
