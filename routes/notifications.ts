import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { except } from "hono/combine";
import { toAppError } from "./errors.ts";
import { errors } from "../lib/errors.ts";
import { SettingsPatch } from "../services/notifications/settings.ts";
import { SMS_STATUS_PATH } from "../services/notifications/sms_status.ts";
import { renderWith } from "../services/notifications/templates.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import {
  AnyObject,
  BatchRequest,
  DeadLetterQuery,
  EventIngest,
  EventQuery,
  IdParam,
  ListQuery,
  LogQuery,
  Notification,
  PreviewRequest,
  RuleCreate,
  RuleUpdate,
  SendRequest,
  StatsQuery,
  TemplateCreate,
  TemplateUpdate,
} from "./notifications_schemas.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

/**
 * Notifications (docs/notifications.md): service_role and admin only, except the SMS status callback, which
 * Twilio calls without a key: its signature is its authentication, and its project comes from the host.
 */
export const notificationRoutes = new OpenAPIHono<AppEnv>();
const guard = [resolveProject, authenticate, allow("service_role")] as const;
notificationRoutes.use("/v1/notifications", ...guard);
notificationRoutes.use("/v1/notifications/*", except(SMS_STATUS_PATH, ...guard));
notificationRoutes.use(SMS_STATUS_PATH, resolveProject);

const tags = ["Notifications"];
const security = PROJECT_SECURITY;
const Many = z.array(AnyObject);

// Static paths first: /{id} would otherwise catch them.

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/send",
    tags,
    security,
    summary: "Send one notification (queued; suppressed when a quota is reached)",
    request: jsonBody(SendRequest),
    responses: { 200: ok(Notification, "The notification"), ...failures(400, 401, 403, 409) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.send(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/send/batch",
    tags,
    security,
    summary: "Send several notifications; each item succeeds or fails on its own",
    request: jsonBody(BatchRequest),
    responses: {
      200: ok(
        z.object({
          results: z.array(z.object({
            index: z.number().int(),
            notification: Notification.optional(),
            error: z.object({ code: z.string(), message: z.string() }).optional(),
          })),
        }),
        "One result per request, in order",
      ),
      ...failures(400, 401, 403),
    },
  }),
  async (c) => {
    const { requests } = c.req.valid("json");
    const results = [];
    for (const [index, item] of requests.entries()) {
      const parsed = SendRequest.safeParse(item);
      if (!parsed.success) {
        const message = parsed.error.issues.map((i) => `${i.path.join(".") || "request"}: ${i.message}`).join(
          "; ",
        );
        results.push({ index, error: { code: "VALIDATION_ERROR", message } });
        continue;
      }
      try {
        const row = await c.env.platform.notifications.send(c.var.project.ref, parsed.data);
        results.push({ index, notification: row as unknown as Record<string, unknown> });
      } catch (err) {
        const e = toAppError(err);
        if (e.status >= 500) throw err;
        results.push({ index, error: { code: e.code, message: e.message } });
      }
    }
    return c.json({ data: { results }, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications",
    tags,
    security,
    summary: "List notifications (channel, status, search, sort, order, limit 1–500, offset)",
    request: { query: ListQuery },
    responses: { 200: ok(z.array(Notification), "Notifications"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const rows = await c.env.platform.notifications.list(c.var.project.ref, c.req.valid("query"));
    return c.json({ data: rows as unknown as Record<string, unknown>[], meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/queue",
    tags,
    security,
    summary: "Queue depth and distribution of pending notifications",
    responses: { 200: ok(AnyObject, "Depth by status and channel"), ...failures(401, 403) },
  }),
  async (c) =>
    c.json({ data: await c.env.platform.notifications.queueDepth(c.var.project.ref), meta: null }, 200),
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/stats",
    tags,
    security,
    summary: "Statistics over a window (1h, 24h, 7d, 30d), optionally for one channel",
    request: { query: StatsQuery },
    responses: { 200: ok(AnyObject, "Counts, success rate and latency"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const { window, channel } = c.req.valid("query");
    return c.json({
      data: await c.env.platform.notifications.stats(c.var.project.ref, window, channel),
      meta: null,
    }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/settings",
    tags,
    security,
    summary: "Public settings: suppliers per channel, retry and quotas (secrets shown as *_set)",
    responses: { 200: ok(AnyObject, "Settings"), ...failures(401, 403) },
  }),
  async (c) => {
    const settings = await c.env.platform.notifications.publicSettings(c.var.project.ref);
    return c.json({ data: settings, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/notifications/settings",
    tags,
    security,
    summary: "Change settings field by field; secrets are write-only and encrypted at rest",
    request: jsonBody(SettingsPatch),
    responses: { 200: ok(AnyObject, "Settings"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const settings = await c.env.platform.notifications.patchSettings(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: settings, meta: null }, 200);
  },
);

// Templates

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/templates",
    tags,
    security,
    summary: "List templates",
    responses: { 200: ok(Many, "Templates"), ...failures(401, 403) },
  }),
  async (c) =>
    c.json(
      {
        data: await c.env.platform.notifications.listTemplates(c.var.project.ref) as unknown as Record<
          string,
          unknown
        >[],
        meta: null,
      },
      200,
    ),
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/templates",
    tags,
    security,
    summary: "Create a template (exactly name, channel, subject, body)",
    request: jsonBody(TemplateCreate),
    responses: { 201: ok(AnyObject, "The template"), ...failures(400, 401, 403, 409) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.createTemplate(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 201);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/templates/{id}",
    tags,
    security,
    summary: "Get a template",
    request: { params: IdParam },
    responses: { 200: ok(AnyObject, "The template"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.getTemplate(c.var.project.ref, c.req.valid("param").id);
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/notifications/templates/{id}",
    tags,
    security,
    summary: "Update a template's name, subject or body",
    request: { params: IdParam, ...jsonBody(TemplateUpdate) },
    responses: { 200: ok(AnyObject, "The template"), ...failures(400, 401, 403, 404, 409) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.updateTemplate(
      c.var.project.ref,
      c.req.valid("param").id,
      c.req.valid("json"),
    );
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/notifications/templates/{id}",
    tags,
    security,
    summary: "Delete a template",
    request: { params: IdParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.notifications.deleteTemplate(c.var.project.ref, c.req.valid("param").id);
    return c.json({ data: null, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/templates/{id}/preview",
    tags,
    security,
    summary: "Render a template with variables; nothing is sent",
    request: { params: IdParam, ...jsonBody(PreviewRequest) },
    responses: { 200: ok(AnyObject, "The rendered subject and body"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const template = await c.env.platform.notifications.getTemplate(
      c.var.project.ref,
      c.req.valid("param").id,
    );
    const rendered = await renderWith(template, c.req.valid("json").variables);
    return c.json({
      data: { template_id: template.id, channel: template.channel, ...rendered },
      meta: null,
    }, 200);
  },
);

// Rules

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/rules",
    tags,
    security,
    summary: "List rules",
    responses: { 200: ok(Many, "Rules"), ...failures(401, 403) },
  }),
  async (c) =>
    c.json({
      data: await c.env.platform.notifications.listRules(c.var.project.ref) as unknown as Record<
        string,
        unknown
      >[],
      meta: null,
    }, 200),
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/rules",
    tags,
    security,
    summary: "Create a rule (CEL condition and recipient_expr are type-checked)",
    request: jsonBody(RuleCreate),
    responses: { 201: ok(AnyObject, "The rule"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.createRule(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 201);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/rules/{id}",
    tags,
    security,
    summary: "Get a rule",
    request: { params: IdParam },
    responses: { 200: ok(AnyObject, "The rule"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.getRule(c.var.project.ref, c.req.valid("param").id);
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/notifications/rules/{id}",
    tags,
    security,
    summary: "Update a rule: only the fields given change",
    request: { params: IdParam, ...jsonBody(RuleUpdate) },
    responses: { 200: ok(AnyObject, "The rule"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.updateRule(
      c.var.project.ref,
      c.req.valid("param").id,
      c.req.valid("json"),
    );
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/notifications/rules/{id}",
    tags,
    security,
    summary: "Delete a rule",
    request: { params: IdParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.notifications.deleteRule(c.var.project.ref, c.req.valid("param").id);
    return c.json({ data: null, meta: null }, 200);
  },
);

// Rules-engine events

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/events",
    tags,
    security,
    summary: "List rules-engine events (status, limit, offset)",
    request: { query: EventQuery },
    responses: { 200: ok(Many, "Events"), ...failures(400, 401, 403) },
  }),
  async (c) =>
    c.json({
      data: await c.env.platform.notifications.listEvents(
        c.var.project.ref,
        c.req.valid("query"),
      ) as unknown as Record<string, unknown>[],
      meta: null,
    }, 200),
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/events",
    tags,
    security,
    summary: "Ingest an event: rules of its type are evaluated and matching ones send",
    request: jsonBody(EventIngest),
    responses: { 200: ok(AnyObject, "The event with its status"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.ingestEvent(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

// Dead letters and provider logs

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/dead-letters",
    tags,
    security,
    summary: "List dead-lettered notifications (channel, search, limit, offset)",
    request: { query: DeadLetterQuery },
    responses: { 200: ok(z.array(Notification), "Dead letters"), ...failures(400, 401, 403) },
  }),
  async (c) =>
    c.json({
      data: await c.env.platform.notifications.deadLetters(
        c.var.project.ref,
        c.req.valid("query"),
      ) as unknown as Record<string, unknown>[],
      meta: null,
    }, 200),
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/dead-letters/{id}/retry",
    tags,
    security,
    summary: "Resend a dead-lettered notification",
    request: { params: IdParam },
    responses: {
      200: ok(Notification, "The notification, queued again"),
      ...failures(400, 401, 403, 404, 409),
    },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.retry(c.var.project.ref, c.req.valid("param").id, [
      "dead_lettered",
    ]);
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/providers/logs",
    tags,
    security,
    summary: "Provider logs: every call to a provider (channel, status, limit, offset)",
    request: { query: LogQuery },
    responses: { 200: ok(Many, "Provider logs"), ...failures(400, 401, 403) },
  }),
  async (c) =>
    c.json({
      data: await c.env.platform.notifications.providerLogs(c.var.project.ref, c.req.valid("query")),
      meta: null,
    }, 200),
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: SMS_STATUS_PATH,
    tags,
    security: [],
    summary:
      "Twilio status callback (no API key: X-Twilio-Signature is verified with the project's auth token)",
    description:
      "Twilio's form-encoded status callback (`MessageSid`, `MessageStatus`, `ErrorCode`, …), sent " +
      "to `sms.status_callback_url`. `delivered`/`read` make the notification `delivered`; `undelivered`, " +
      "`failed` and `canceled` dead-letter it; other statuses are logged. A repeated callback changes nothing.",
    request: {
      headers: z.object({ "x-twilio-signature": z.string().optional() }),
    },
    responses: {
      200: ok(
        z.object({
          notification_id: z.string(),
          status: z.string(),
          recorded: z.boolean(),
          changed: z.boolean(),
        }),
        "How the receipt was applied",
      ),
      ...failures(400, 401, 403, 404),
    },
  }),
  async (c) => {
    const type = c.req.header("content-type") ?? "";
    if (!type.toLowerCase().startsWith("application/x-www-form-urlencoded")) {
      throw errors.validation(
        "Expected an application/x-www-form-urlencoded body (Twilio's status callback)",
      );
    }
    const params = new URLSearchParams(await c.req.text());
    const { ref } = c.var.project;
    const result = await c.env.platform.notifications.smsStatus(
      ref,
      c.req.header("x-twilio-signature"),
      params,
    );
    return c.json({ data: result, meta: null }, 200);
  },
);

// One notification

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/{id}",
    tags,
    security,
    summary: "Get a notification",
    request: { params: IdParam },
    responses: { 200: ok(Notification, "The notification"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const row = await c.env.platform.notifications.get(c.var.project.ref, id);
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/notifications/{id}/retry",
    tags,
    security,
    summary: "Retry a failed or dead-lettered notification (409 otherwise)",
    request: { params: IdParam },
    responses: {
      200: ok(Notification, "The notification, queued again"),
      ...failures(400, 401, 403, 404, 409),
    },
  }),
  async (c) => {
    const row = await c.env.platform.notifications.retry(c.var.project.ref, c.req.valid("param").id, [
      "failed",
      "dead_lettered",
    ]);
    return c.json({ data: row as unknown as Record<string, unknown>, meta: null }, 200);
  },
);

notificationRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/notifications/{id}/attempts",
    tags,
    security,
    summary: "Attempts of a notification with the provider's answers",
    request: { params: IdParam },
    responses: { 200: ok(Many, "Attempts"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    return c.json(
      { data: await c.env.platform.notifications.attempts(c.var.project.ref, id), meta: null },
      200,
    );
  },
);
