import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { METRICS } from "../services/alerts/metrics.ts";
import { CHANNELS, CONDITIONS, MAX_COOLDOWN_SECS, WINDOW_SECS } from "../services/alerts/service.ts";
import { FUNCTION_NAME } from "../services/functions/validate_code.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

/** An enum whose error lists the allowed values. */
const oneOf = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(", ")}` });

const Alert = z.object({
  id: z.string().uuid(),
  project_id: z.string(),
  name: z.string(),
  metric: z.enum(METRICS),
  condition: z.enum(CONDITIONS),
  threshold: z.number(),
  channel: z.enum(CHANNELS),
  destination: z.string(),
  function_name: z.string().nullable().openapi({ description: "null: the whole project" }),
  window_secs: z.number().int(),
  cooldown_secs: z.number().int(),
  enabled: z.boolean(),
  state: z.enum(["ok", "firing"]),
  last_value: z.number().nullable().openapi({ description: "The metric's value at the last evaluation" }),
  last_evaluated_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi("Alert");

const AlertEvent = z.object({
  id: z.string().uuid(),
  alert_id: z.string().uuid(),
  status: z.enum(["triggered", "resolved"]),
  value: z.number().nullable(),
  threshold: z.number(),
  notification_id: z.string().nullable().openapi({ description: "The notification sent for this event" }),
  created_at: z.string(),
}).openapi("AlertEvent");

const threshold = z.number({ error: "must be a number" }).refine(Number.isFinite, "must be a finite number");
const windowSecs = z.number().int().min(WINDOW_SECS.min, `must be ${WINDOW_SECS.min}–${WINDOW_SECS.max}`)
  .max(WINDOW_SECS.max, `must be ${WINDOW_SECS.min}–${WINDOW_SECS.max}`)
  .openapi({ description: "60–86400, default 300" });
const cooldownSecs = z.number().int().min(0, `must be 0–${MAX_COOLDOWN_SECS}`)
  .max(MAX_COOLDOWN_SECS, `must be 0–${MAX_COOLDOWN_SECS}`)
  .openapi({ description: "No second trigger within this many seconds of the last one (default 0)" });
const destination = z.string().min(1, "must not be empty").max(2000).openapi({
  description: "An email address, an E.164 number, a device token or an http(s) URL, as the channel needs",
});

const CreateAlert = z.strictObject({
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9 _.:-]{0,99}$/,
    "must be 1–100 letters, digits, ' ', '_', '.', ':' or '-'",
  ),
  metric: oneOf(METRICS),
  condition: oneOf(CONDITIONS),
  threshold,
  channel: oneOf(CHANNELS),
  destination,
  function_name: z.string().regex(FUNCTION_NAME, "must match ^[a-z][a-z0-9_-]{0,62}$").nullable().optional()
    .openapi({ description: "Scope the metric to this function (it must exist); absent: the whole project" }),
  window_secs: windowSecs.optional(),
  cooldown_secs: cooldownSecs.optional(),
}).openapi("CreateAlert");

const PatchAlert = z.strictObject({
  enabled: z.boolean().optional(),
  threshold: threshold.optional(),
  window_secs: windowSecs.optional(),
  cooldown_secs: cooldownSecs.optional(),
  destination: destination.optional(),
}).refine(
  (p) => Object.keys(p).length > 0,
  "give at least one of enabled, threshold, window_secs, cooldown_secs, destination",
)
  .openapi("PatchAlert");

const Page = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50).openapi({ description: "1–500, default 50" }),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
});

const MetricsQuery = z.strictObject({
  window_secs: z.coerce.number().pipe(windowSecs).optional(),
  function_name: z.string().regex(FUNCTION_NAME, "must match ^[a-z][a-z0-9_-]{0,62}$").optional(),
});

const MetricsView = z.object({
  window_secs: z.number().int(),
  function_name: z.string().nullable(),
  ...Object.fromEntries(METRICS.map((m) => [m, z.number().nullable()])),
}).openapi("Metrics");

const IdParam = z.object({ id: z.string().max(200) });

const manage = [resolveProject, authenticate, allow("service_role")];
const TAGS = ["Alerts"];

/** Alert and metrics routes (docs/alerts.md). Mounted before the function routes that share the prefix. */
export const alertRoutes = new OpenAPIHono<AppEnv>();

alertRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions/alerts",
    tags: TAGS,
    summary: "Create an alert, or update the one of that name",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: jsonBody(CreateAlert),
    responses: {
      200: ok(Alert, "The alert, updated"),
      201: ok(Alert, "The alert, created"),
      ...failures(400, 401, 403),
    },
  }),
  async (c) => {
    const { alert, created } = await c.env.platform.alerts.upsert(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: alert, meta: null }, created ? 201 : 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/alerts",
    tags: TAGS,
    summary: "List alerts",
    security: PROJECT_SECURITY,
    middleware: manage,
    responses: { 200: ok(z.array(Alert), "Every alert, by name"), ...failures(401, 403) },
  }),
  async (c) => {
    return c.json({ data: await c.env.platform.alerts.list(c.var.project.ref), meta: null }, 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/alerts/events",
    tags: TAGS,
    summary: "Events of every alert, newest first",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { query: Page },
    responses: { 200: ok(z.array(AlertEvent), "Events"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const events = await c.env.platform.alerts.events(c.var.project.ref, c.req.valid("query"));
    return c.json({ data: events, meta: null }, 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/functions/alerts/{id}",
    tags: TAGS,
    summary: "Enable or disable an alert, or change its threshold, window, cooldown or destination",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: IdParam, ...jsonBody(PatchAlert) },
    responses: { 200: ok(Alert, "The alert"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const alert = await c.env.platform.alerts.patch(
      c.var.project.ref,
      c.req.valid("param").id,
      c.req.valid("json"),
    );
    return c.json({ data: alert, meta: null }, 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/functions/alerts/{id}",
    tags: TAGS,
    summary: "Delete an alert and its events (404 for an unknown id)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: IdParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.alerts.delete(c.var.project.ref, c.req.valid("param").id);
    return c.json({ data: null, meta: null }, 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/alerts/{id}/events",
    tags: TAGS,
    summary: "Events of one alert, newest first (404 for an unknown alert)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: IdParam, query: Page },
    responses: { 200: ok(z.array(AlertEvent), "Events"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const events = await c.env.platform.alerts.events(c.var.project.ref, {
      alertId: c.req.valid("param").id,
      ...c.req.valid("query"),
    });
    return c.json({ data: events, meta: null }, 200);
  },
);

alertRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/metrics",
    tags: TAGS,
    summary: "Every metric an alert can watch, now, over a window, project-wide or of one function",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { query: MetricsQuery },
    responses: { 200: ok(MetricsView, "The metrics"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const metrics = await c.env.platform.alerts.metrics(c.var.project.ref, c.req.valid("query"));
    return c.json({ data: metrics, meta: null }, 200);
  },
);
