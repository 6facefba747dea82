import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { errors } from "../lib/errors.ts";
import { JOB_STATUSES } from "../services/jobs/store.ts";
import { FUNCTION_NAME } from "../services/functions/validate_code.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const Job = z.object({
  id: z.string().uuid(),
  project_id: z.string(),
  function_name: z.string(),
  payload: z.unknown().openapi({ description: "Sent to the function as the JSON body" }),
  status: z.enum(JOB_STATUSES),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  error: z.string().nullable().openapi({
    description: "Why the last attempt failed; kept until the next one",
  }),
  scheduled_at: z.string().openapi({ description: "When the next (or running) attempt is due, ISO 8601" }),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
  created_at: z.string(),
}).openapi("Job");

const CreateJob = z.strictObject({
  function_name: z.string().regex(FUNCTION_NAME, "must match ^[a-z][a-z0-9_-]{0,62}$"),
  payload: z.unknown().optional(),
  delay_secs: z.number().int().min(0).max(604_800).optional().openapi({ description: "0–604800, default 0" }),
  max_attempts: z.number().int().min(1).max(25).optional().openapi({ description: "1–25, default 3" }),
}).openapi("CreateJob");

const limit = z.coerce.number().int().min(1).max(500).default(50)
  .openapi({ description: "1–500, default 50" });
const offset = z.coerce.number().int().min(0).default(0);
const ListQuery = z.strictObject({ status: z.enum(JOB_STATUSES).optional(), limit, offset });
const DlqQuery = z.strictObject({ limit, offset });
const IdParam = z.object({ id: z.string().max(100) });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A malformed id names no job: 404, like an unknown one. */
function jobId(id: string): string {
  if (!UUID.test(id)) throw errors.notFound(`Job "${id.slice(0, 100)}" does not exist`);
  return id.toLowerCase();
}

const manage = [resolveProject, authenticate, allow("service_role")];
const TAGS = ["Jobs"];

/** Job and DLQ routes (docs/jobs.md). Mounted before the function routes that share the prefix. */
export const jobRoutes = new OpenAPIHono<AppEnv>();

jobRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions/jobs",
    tags: TAGS,
    summary: "Queue a job for a function",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: jsonBody(CreateJob),
    responses: { 201: ok(Job, "The job, pending"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const job = await c.env.platform.jobs.create(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: job, meta: null }, 201);
  },
);

jobRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/jobs",
    tags: TAGS,
    summary: "List jobs, newest first",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { query: ListQuery },
    responses: { 200: ok(z.array(Job), "Jobs"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const list = await c.env.platform.jobs.list(c.var.project.ref, c.req.valid("query"));
    return c.json({ data: list, meta: null }, 200);
  },
);

jobRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/jobs/dlq",
    tags: TAGS,
    summary: "List dead jobs (the dead-letter queue)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { query: DlqQuery },
    responses: { 200: ok(z.array(Job), "Dead jobs"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const list = await c.env.platform.jobs.list(c.var.project.ref, {
      ...c.req.valid("query"),
      status: "dead",
    });
    return c.json({ data: list, meta: null }, 200);
  },
);

jobRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions/jobs/dlq/requeue",
    tags: TAGS,
    summary: "Put every dead job back to pending, attempts reset",
    security: PROJECT_SECURITY,
    middleware: manage,
    responses: {
      200: ok(z.object({ requeued: z.number().int() }), "How many jobs were requeued"),
      ...failures(401, 403),
    },
  }),
  async (c) => {
    const requeued = await c.env.platform.jobs.requeueDead(c.var.project.ref);
    return c.json({ data: { requeued }, meta: null }, 200);
  },
);

jobRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/jobs/{id}",
    tags: TAGS,
    summary: "Get a job",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: IdParam },
    responses: { 200: ok(Job, "The job"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    const job = await c.env.platform.jobs.get(c.var.project.ref, jobId(c.req.valid("param").id));
    return c.json({ data: job, meta: null }, 200);
  },
);

jobRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions/jobs/{id}/retry",
    tags: TAGS,
    summary: "Put a job back to pending, attempts reset (not while it runs)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: IdParam },
    responses: { 200: ok(Job, "The job, pending"), ...failures(401, 403, 404, 409) },
  }),
  async (c) => {
    const job = await c.env.platform.jobs.retry(c.var.project.ref, jobId(c.req.valid("param").id));
    return c.json({ data: job, meta: null }, 200);
  },
);
