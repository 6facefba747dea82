import { z } from "@hono/zod-openapi";
import { EVENT_STATUSES } from "../services/notifications/events.ts";
import { WINDOWS } from "../services/notifications/queries.ts";
import { STATUSES } from "../services/notifications/store.ts";

/** A notification channel. */
export const Channel = z.enum(["email", "sms", "push", "webhook"]);

const Json = z.record(z.string(), z.unknown());

/** POST /v1/notifications/send (docs/notifications.md). */
export const SendRequest = z.strictObject({
  channel: Channel,
  recipient: z.string().min(1).max(4096)
    .openapi({ description: "Email address, E.164 phone number, device token (fcm:/apns: prefix) or URL" }),
  body: z.string().max(100_000).optional(),
  subject: z.string().max(998).optional(),
  templateId: z.string().uuid().optional(),
  variables: Json.optional(),
  metadata: Json.optional(),
  idempotencyKey: z.string().min(1).max(255).optional(),
  event: z.string().min(1).max(255).optional().openapi({ description: "Webhook: the event name" }),
  payload: z.union([z.string().max(1_000_000), Json]).optional()
    .openapi({ description: "Webhook: the payload, a string or an object" }),
}).openapi("NotificationSend");

/** POST /v1/notifications/send/batch: each item is validated on its own. */
export const BatchRequest = z.strictObject({
  requests: z.array(z.unknown()).min(1).max(1000),
}).openapi("NotificationBatch");

/** A notification as the API returns it. */
export const Notification = Json.openapi("Notification", {
  description: "id, channel, recipient, subject, body, event, payload, template_id, variables, metadata, " +
    "idempotency_key, rule_id, event_id, status, attempts, max_attempts, last_error, provider, " +
    "provider_message_id and a timestamp per transition (queued_at, sending_at, sent_at, delivered_at, " +
    "failed_at, dead_lettered_at, suppressed_at, next_attempt_at)",
});

/** Any object answer (stats, queue, settings, attempts…). */
export const AnyObject = Json;

const limit = z.coerce.number().int().min(1).max(500).default(50);
const offset = z.coerce.number().int().min(0).max(10_000_000).default(0);

/** Query of GET /v1/notifications. */
export const ListQuery = z.strictObject({
  channel: Channel.optional(),
  status: z.enum(STATUSES).optional(),
  search: z.string().min(1).max(200).optional(),
  sort: z.enum(["created_at", "updated_at", "status"]).default("created_at"),
  order: z.enum(["asc", "desc"]).default("desc"),
  limit,
  offset,
});

/** Query of GET /v1/notifications/dead-letters. */
export const DeadLetterQuery = z.strictObject({
  channel: Channel.optional(),
  search: z.string().min(1).max(200).optional(),
  limit,
  offset,
});

/** Query of GET /v1/notifications/events. */
export const EventQuery = z.strictObject({ status: z.enum(EVENT_STATUSES).optional(), limit, offset });

/** Query of GET /v1/notifications/providers/logs. */
export const LogQuery = z.strictObject({
  channel: Channel.optional(),
  status: z.enum(["success", "error"]).optional(),
  limit,
  offset,
});

/** Query of GET /v1/notifications/stats. */
export const StatsQuery = z.strictObject({
  window: z.enum(Object.keys(WINDOWS) as [keyof typeof WINDOWS]).default("24h"),
  channel: Channel.optional(),
});

/** A path id. */
export const IdParam = z.object({ id: z.string().uuid() });

/** Template creation: exactly these four fields. */
export const TemplateCreate = z.strictObject({
  name: z.string().min(1).max(200),
  channel: Channel,
  subject: z.string().max(998).nullable(),
  body: z.string().min(1).max(100_000),
}).openapi("NotificationTemplateCreate");

/** Template update: name, subject and body only. */
export const TemplateUpdate = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  subject: z.string().max(998).nullable().optional(),
  body: z.string().min(1).max(100_000).optional(),
}).openapi("NotificationTemplateUpdate");

/** Template preview. */
export const PreviewRequest = z.strictObject({ variables: Json.default({}) }).openapi("NotificationPreview");

const ruleFields = {
  name: z.string().min(1).max(200),
  trigger_type: z.string().min(1).max(255),
  condition: z.string().min(1).max(4000).openapi({ description: "CEL over `event`, returns bool" }),
  channel: Channel,
  recipient_expr: z.string().min(1).max(4000).openapi({ description: "CEL over `event`, returns string" }),
  template_id: z.string().uuid().nullable(),
  subject: z.string().max(998).nullable(),
  body: z.string().max(100_000).nullable(),
  delay_secs: z.number().int().min(0).max(604_800),
  enabled: z.boolean(),
};

/** Rule creation. */
export const RuleCreate = z.strictObject({
  ...ruleFields,
  template_id: ruleFields.template_id.default(null),
  subject: ruleFields.subject.default(null),
  body: ruleFields.body.default(null),
  delay_secs: ruleFields.delay_secs.default(0),
  enabled: ruleFields.enabled.default(true),
}).openapi("NotificationRuleCreate");

/** Rule update: only the fields given change. */
export const RuleUpdate = z.strictObject(ruleFields).partial().openapi("NotificationRuleUpdate");

/** Event ingest. */
export const EventIngest = z.strictObject({
  type: z.string().min(1).max(255),
  data: Json.default({}),
}).openapi("NotificationEventIngest");
