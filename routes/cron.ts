import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { FUNCTION_NAME } from "../services/functions/validate_code.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const CronEntry = z.object({
  id: z.string().uuid(),
  project_id: z.string(),
  name: z.string(),
  schedule: z.string().openapi({ description: "6 fields, seconds first, UTC", example: "0 */5 * * * *" }),
  function_name: z.string(),
  payload: z.unknown(),
  is_active: z.boolean(),
  last_run: z.string().nullable(),
  next_run: z.string().nullable(),
  created_at: z.string(),
}).openapi("CronEntry");

const CRON_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

const UpsertCron = z.strictObject({
  name: z.string().regex(CRON_NAME, "must be 1–63 letters, digits, '_', '.' or '-'"),
  schedule: z.string().min(1).max(200).openapi({
    description: "5 fields, 6 fields (seconds first) or @hourly, @daily, @weekly, @monthly, @yearly (UTC)",
  }),
  function_name: z.string().regex(FUNCTION_NAME, "must match ^[a-z][a-z0-9_-]{0,62}$"),
  payload: z.unknown().optional(),
  is_active: z.boolean().optional().openapi({ description: "false pauses the entry (default true)" }),
}).openapi("UpsertCronEntry");

const NameParam = z.object({ name: z.string().min(1).max(200) });

const manage = [resolveProject, authenticate, allow("service_role")];
const TAGS = ["Cron"];

/** Cron routes (docs/jobs.md). Mounted before the function routes that share the prefix. */
export const cronRoutes = new OpenAPIHono<AppEnv>();

cronRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions/cron",
    tags: TAGS,
    summary: "Create a cron entry, or update the one of that name",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: jsonBody(UpsertCron),
    responses: {
      200: ok(CronEntry, "The entry, updated"),
      201: ok(CronEntry, "The entry, created"),
      ...failures(400, 401, 403),
    },
  }),
  async (c) => {
    const { entry, created } = await c.env.platform.cron.upsert(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: entry, meta: null }, created ? 201 : 200);
  },
);

cronRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/cron",
    tags: TAGS,
    summary: "List cron entries",
    security: PROJECT_SECURITY,
    middleware: manage,
    responses: { 200: ok(z.array(CronEntry), "Every entry, by name"), ...failures(401, 403) },
  }),
  async (c) => {
    const list = await c.env.platform.cron.list(c.var.project.ref);
    return c.json({ data: list, meta: null }, 200);
  },
);

cronRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/functions/cron/{name}",
    tags: TAGS,
    summary: "Delete a cron entry (404 for an unknown name)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.cron.delete(c.var.project.ref, c.req.valid("param").name);
    return c.json({ data: null, meta: null }, 200);
  },
);
