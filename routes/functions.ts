import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { STATS_WINDOWS } from "../services/functions/invocations.ts";
import { PermissionsPatch } from "../services/functions/permissions.ts";
import { FUNCTION_NAME } from "../services/functions/validate_code.ts";
import type { AppEnv } from "./env.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import { invokeRoute } from "./invoke.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const Permissions = z.object({
  allow_net: z.array(z.string()),
  memory_mb: z.number().int(),
  timeout_secs: z.number().int(),
  cpu_ms: z.number().int().openapi({ description: "CPU time per call (ms)" }),
}).openapi("FunctionPermissions");

const FunctionObject = z.object({
  id: z.string().uuid(),
  project_id: z.string(),
  name: z.string(),
  runtime: z.enum(["deno", "wasm"]),
  code: z.string(),
  code_hash: z.string().openapi({ description: "SHA-256 (hex) of code" }),
  bundle_hash: z.string().nullable().openapi({
    description: "SHA-256 (hex) of the bundle built at deploy when the code imports packages; null otherwise",
  }),
  dependencies: z.record(z.string(), z.string()).openapi({
    description: "Each import as resolved at deploy, with its version (https: imports: their hash)",
  }),
  env_vars: z.record(z.string(), z.string()),
  permissions: Permissions,
  is_active: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
}).openapi("Function");

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const EnvVars = z.record(
  z.string().regex(ENV_KEY, "must be a variable name (letters, digits, _)"),
  z.string().max(32_768),
).refine((o) => Object.keys(o).length <= 200, "at most 200 variables");

const Name = z.string().regex(FUNCTION_NAME, "must match ^[a-z][a-z0-9_-]{0,62}$");

const Deploy = z.strictObject({
  name: Name,
  runtime: z.enum(["deno", "wasm"]),
  code: z.string().min(1).openapi({ description: "Source text (deno) or base64 of the module (wasm)" }),
  env_vars: EnvVars.optional().openapi({
    description: "Replaces the variables when sent; kept when omitted",
  }),
  permissions: PermissionsPatch.optional(),
  is_active: z.boolean().optional(),
}).openapi("DeployFunction");

const Update = z.strictObject({
  code: z.string().min(1).optional(),
  env_vars: EnvVars.optional(),
  is_active: z.boolean().optional(),
  permissions: PermissionsPatch.optional().openapi({ description: "Merged field by field; bounds checked" }),
}).openapi("UpdateFunction");

const EnvList = z.array(z.object({ key: z.string(), value: z.string() }));
const PutEnv = z.strictObject({
  vars: z.array(z.strictObject({
    key: z.string().regex(ENV_KEY, "must be a variable name (letters, digits, _)"),
    value: z.string().max(32_768),
  })).max(200),
}).openapi("PutFunctionEnv");

const LogEntry = z.object({
  timestamp: z.string(),
  level: z.enum(["debug", "info", "warn", "error"]),
  message: z.string(),
});

const Stats = z.object({
  window: z.string(),
  count: z.number().int(),
  errors: z.number().int(),
  timeouts: z.number().int(),
  oom: z.number().int(),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  avg_ms: z.number().nullable(),
}).openapi("FunctionStats");

const NameParam = z.object({
  name: z.string().min(1).max(200).openapi({ description: "The function's name, or its id" }),
});

const manage = [resolveProject, authenticate, allow("service_role")];
const TAGS = ["Functions"];

/**
 * Edge function routes (docs/functions.md). Mount after jobs, cron and alerts, whose paths share the prefix.
 */
export const functionsRoutes = new OpenAPIHono<AppEnv>();

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions",
    tags: TAGS,
    summary: "List functions",
    security: PROJECT_SECURITY,
    middleware: manage,
    responses: { 200: ok(z.array(FunctionObject), "Every function of the project"), ...failures(401, 403) },
  }),
  async (c) => {
    const list = await c.env.platform.functions.service.list(c.var.project.ref);
    return c.json({ data: list, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/functions",
    tags: TAGS,
    summary: "Deploy a function (upsert on name)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: jsonBody(Deploy),
    responses: {
      200: ok(FunctionObject, "The function, replaced"),
      201: ok(FunctionObject, "The function, created"),
      ...failures(400, 401, 403, 409),
    },
  }),
  async (c) => {
    const { fn, created } = await c.env.platform.functions.service.deploy(
      c.var.project.ref,
      c.req.valid("json"),
    );
    return c.json({ data: fn, meta: null }, created ? 201 : 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/{name}",
    tags: TAGS,
    summary: "Get a function by name, or by id",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam },
    responses: { 200: ok(FunctionObject, "The function"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    const fn = await c.env.platform.functions.service.get(c.var.project.ref, c.req.valid("param").name);
    return c.json({ data: fn, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/functions/{name}",
    tags: TAGS,
    summary: "Update code, env_vars, is_active or permissions",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam, ...jsonBody(Update) },
    responses: { 200: ok(FunctionObject, "The function"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const fn = await c.env.platform.functions.service.update(
      c.var.project.ref,
      c.req.valid("param").name,
      c.req.valid("json"),
    );
    return c.json({ data: fn, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/functions/{name}",
    tags: TAGS,
    summary: "Delete a function",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.functions.service.delete(c.var.project.ref, c.req.valid("param").name);
    return c.json({ data: null, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/{name}/code",
    tags: TAGS,
    summary: "The function's code",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam },
    responses: { 200: ok(z.object({ code: z.string() }), "The code"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    const fn = await c.env.platform.functions.service.get(c.var.project.ref, c.req.valid("param").name);
    return c.json({ data: { code: fn.code }, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/{name}/env",
    tags: TAGS,
    summary: "The function's variables, decrypted",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam },
    responses: { 200: ok(EnvList, "Variables as key and value"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    const vars = await c.env.platform.functions.service.getEnv(c.var.project.ref, c.req.valid("param").name);
    return c.json({ data: vars, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "put",
    path: "/v1/functions/{name}/env",
    tags: TAGS,
    summary: "Replace the function's variables (encrypted at rest)",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: { params: NameParam, ...jsonBody(PutEnv) },
    responses: { 200: ok(z.null(), "Replaced"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    await c.env.platform.functions.service.putEnv(
      c.var.project.ref,
      c.req.valid("param").name,
      c.req.valid("json").vars,
    );
    return c.json({ data: null, meta: null }, 200);
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/{name}/logs",
    tags: TAGS,
    summary: "Recent console output of the function, newest first",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: {
      params: NameParam,
      query: z.object({
        limit: z.coerce.number().int().min(1).max(1000).default(100),
        level: z.enum(["debug", "info", "warn", "error"]).optional(),
      }),
    },
    responses: { 200: ok(z.array(LogEntry), "Log lines"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const { functions } = c.env.platform;
    const fn = await functions.service.get(c.var.project.ref, c.req.valid("param").name);
    const { limit, level } = c.req.valid("query");
    return c.json(
      { data: await functions.logs.read(c.var.project.ref, fn.id, limit, level), meta: null },
      200,
    );
  },
);

functionsRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/functions/{name}/stats",
    tags: TAGS,
    summary: "Invocation count, failures and duration percentiles over a window",
    security: PROJECT_SECURITY,
    middleware: manage,
    request: {
      params: NameParam,
      query: z.object({
        window: z.enum(Object.keys(STATS_WINDOWS) as [keyof typeof STATS_WINDOWS]).default("24h"),
      }),
    },
    responses: { 200: ok(Stats, "The summary"), ...failures(400, 401, 403, 404) },
  }),
  async (c) => {
    const { functions } = c.env.platform;
    const fn = await functions.service.get(c.var.project.ref, c.req.valid("param").name);
    const stats = await functions.recorder.stats(c.var.project.ref, fn.id, c.req.valid("query").window);
    return c.json({ data: stats, meta: null }, 200);
  },
);

// Invoke is served by the edge, in front of this app (routes/invoke.ts): documented from its definition there.
functionsRoutes.openAPIRegistry.registerPath(invokeRoute);
