import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { allow, authenticate } from "./middleware/auth.ts";
import type { AppEnv } from "./env.ts";
import type { DataSettings as DataSettingsInForce } from "../services/data/settings.ts";
import { OPENAPI_MODES, type OpenApiMode } from "../services/data/store.ts";
import {
  APP_SETTINGS_LIMITS,
  appSettingNameValid,
  HOISTED_LIMITS,
  hoistedSettingProblem,
  REQUEST_ROLES,
  roleSettingProblem,
} from "../services/data/request_settings.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const CurrentProject = z.object({
  ref: z.string(),
  name: z.string(),
  role: z.enum(["anon", "authenticated", "service_role", "admin"]),
  user_id: z.string().nullable(),
}).openapi("CurrentProject");

const SqlRequest = z.strictObject({
  query: z.string().min(1).max(1_000_000),
  params: z.array(z.unknown()).max(1000).optional()
    .openapi({ description: "Values of $1…$n; with params the query must be one statement" }),
}).openapi("SqlRequest");

// The platform's own schemas in a project database, and PostgreSQL's: never exposed by a project's setting.
const RESERVED_SCHEMAS = new Set([
  "information_schema",
  "auth",
  "realtime",
  "notifications",
  "extensions",
  "platform",
  "migrations",
]);
/** True when `text` holds no control character. */
function printable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

const SchemaName = z.string().min(1).max(63).refine(printable, {
  message: "must not hold control characters",
})
  .refine((name) => !name.toLowerCase().startsWith("pg_") && !RESERVED_SCHEMAS.has(name), {
    message: "is reserved by the platform",
  });

const DataSettings = z.object({
  schemas: z.array(z.string()).openapi({ description: "Exposed schemas, the first the default" }),
  aggregates: z.boolean(),
  plan: z.boolean(),
  server_timing: z.boolean(),
  pre_request: z.string().nullable().openapi({ description: "Function run before every request, or null" }),
  role_settings: z.partialRecord(z.string(), z.record(z.string(), z.string())).openapi({
    description: "Settings of the request roles (anon, authenticated, service_role), applied on each request",
  }),
  app_settings: z.record(z.string(), z.string()).openapi({
    description: "Values each request's SQL reads as current_setting('app.settings.<name>')",
  }),
  openapi_mode: z.enum(OPENAPI_MODES as [OpenApiMode, ...OpenApiMode[]]).openapi({
    description: "What GET /rest/v1/ shows: follow-privileges, ignore-privileges or disabled (404)",
  }),
  openapi_security_active: z.boolean().openapi({
    description: "The OpenAPI document carries the JWT security definition",
  }),
  hoisted_tx_settings: z.array(z.string()).openapi({
    description: "Settings of a called function's set clause that its whole transaction takes",
  }),
}).openapi("DataSettings");

const RoleSettingsPatch = z.partialRecord(
  z.enum(REQUEST_ROLES as [string, ...string[]]),
  z.record(z.string().max(63), z.string().min(1).max(64)),
).superRefine((roles, ctx) => {
  for (const [role, settings] of Object.entries(roles)) {
    for (const [name, value] of Object.entries(settings ?? {})) {
      const problem = roleSettingProblem(name, value);
      if (problem) ctx.addIssue({ code: "custom", message: problem, path: [role, name] });
    }
  }
}).openapi({
  description: "By role, the settings its requests take: statement_timeout, lock_timeout, " +
    "idle_in_transaction_session_timeout, default_transaction_isolation, plan_filter.statement_cost_limit",
});

const AppSettingsPatch = z.record(
  z.string().refine(appSettingNameValid, { message: "must be letters, digits and underscores" }),
  z.string().max(APP_SETTINGS_LIMITS.valueChars).refine((v) => !v.includes("\0"), {
    message: "must not hold a NUL character",
  }),
).refine((settings) => Object.keys(settings).length <= APP_SETTINGS_LIMITS.count, {
  message: `must hold at most ${APP_SETTINGS_LIMITS.count} settings`,
}).openapi({ description: "Values read as current_setting('app.settings.<name>') on every request" });

const HoistedPatch = z.array(
  z.string().max(HOISTED_LIMITS.nameChars).superRefine((name, ctx) => {
    const problem = hoistedSettingProblem(name);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
).max(HOISTED_LIMITS.count)
  .refine((names) => new Set(names.map((n) => n.toLowerCase())).size === names.length, {
    message: "must not repeat a setting",
  })
  .openapi({
    description: "Setting names (PostgREST's db-hoisted-tx-settings): a called function's set settings " +
      "among them apply to its whole transaction; [] hoists none",
  });

const DataSettingsPatch = z.strictObject({
  schemas: z.array(SchemaName).min(1).max(20)
    .refine((names) => new Set(names).size === names.length, { message: "must not repeat a schema" })
    .nullable().optional(),
  aggregates: z.boolean().nullable().optional(),
  plan: z.boolean().nullable().optional(),
  server_timing: z.boolean().nullable().optional(),
  pre_request: z.string().min(1).max(127).refine(printable, { message: "must not hold control characters" })
    .regex(/^[^.]+(\.[^.]+)?$/, "must be a function name, schema-qualified or not")
    .nullable().optional(),
  role_settings: RoleSettingsPatch.nullable().optional(),
  app_settings: AppSettingsPatch.nullable().optional(),
  openapi_mode: z.enum(OPENAPI_MODES as [OpenApiMode, ...OpenApiMode[]]).nullable().optional(),
  openapi_security_active: z.boolean().nullable().optional(),
  hoisted_tx_settings: HoistedPatch.nullable().optional(),
}).openapi("DataSettingsPatch", {
  description: "Fields to change; null resets one to the platform's default",
});

/** The answer's shape of a project's resolved data settings. */
function dataSettingsView(s: DataSettingsInForce) {
  return {
    schemas: [...s.schemas],
    aggregates: s.aggregates,
    plan: s.plan,
    server_timing: s.serverTiming,
    pre_request: s.preRequest ?? null,
    role_settings: s.roleSettings,
    app_settings: s.appSettings,
    openapi_mode: s.openapiMode,
    openapi_security_active: s.openapiSecurityActive,
    hoisted_tx_settings: [...s.hoistedTxSettings],
  };
}

const UrlText = z.string().min(1).max(2048).refine(printable, { message: "must not hold control characters" })
  .refine((url) => !url.includes(" "), { message: "must not hold spaces" });

/** True when `text` (with `*` standing for a host label or path segment) is an absolute http(s) URL. */
function httpUrl(text: string): boolean {
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    return new URL(text.replaceAll("*", "x")).hostname !== "";
  } catch {
    return false;
  }
}

const AuthSettings = z.object({
  site_url: z.string().nullable().openapi({ description: "Where recovery links land by default" }),
  redirect_urls: z.array(z.string()).openapi({ description: "Glob patterns of other allowed landings" }),
}).openapi("AuthSettings");

const AuthSettingsPatch = z.strictObject({
  site_url: UrlText.refine((url) => !url.includes("*") && httpUrl(url), {
    message: "must be an absolute http(s) URL",
  }).nullable().optional(),
  redirect_urls: z.array(UrlText.refine(httpUrl, { message: "must be an absolute http(s) URL or pattern" }))
    .max(100).nullable().optional(),
}).openapi("AuthSettingsPatch", {
  description: "Fields to change; null resets one to the platform's default",
});

/** Routes about the project of the request: who am I, its data settings, and SQL for its owner. */
export const projectRoutes = new OpenAPIHono<AppEnv>();
projectRoutes.use("/v1/project", authenticate);
projectRoutes.use("/v1/project/data-settings", authenticate);
projectRoutes.use("/v1/project/auth-settings", authenticate);
projectRoutes.use("/v1/sql", authenticate);

projectRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/project",
    tags: ["Project"],
    summary: "The project this request resolved to, and the caller's role in it",
    security: PROJECT_SECURITY,
    responses: { 200: ok(CurrentProject, "The project and the caller"), ...failures(401, 404) },
  }),
  (c) => {
    const { project, role, user } = c.get("caller");
    return c.json({
      data: { ref: project.ref, name: project.name, role, user_id: user?.sub ?? null },
      meta: null,
    }, 200);
  },
);

projectRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/sql",
    tags: ["Project"],
    summary: "Run SQL in the project database as its owner (service_role and admin only)",
    security: PROJECT_SECURITY,
    middleware: [allow("service_role")] as const,
    request: jsonBody(SqlRequest),
    responses: {
      200: ok(z.array(z.record(z.string(), z.unknown())), "Rows of the last statement"),
      ...failures(400, 401, 403),
    },
  }),
  async (c) => {
    const { query, params } = c.req.valid("json");
    const rows = await c.env.platform.projects.runSql(c.var.project.ref, query, params);
    c.env.platform.data.schemaChanged(c.var.project.ref); // the SQL may have been DDL
    return c.json({ data: rows, meta: null }, 200);
  },
);

projectRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/project/data-settings",
    tags: ["Project"],
    summary: "The project's data API settings: exposed schemas, aggregates, plans, Server-Timing, " +
      "pre-request, role settings, app.settings, OpenAPI mode and hoisted settings",
    security: PROJECT_SECURITY,
    middleware: [allow("service_role")] as const,
    responses: { 200: ok(DataSettings, "The settings in force"), ...failures(401, 403) },
  }),
  async (c) => {
    const settings = await c.env.platform.data.settingsOf(c.var.project.ref);
    return c.json({ data: dataSettingsView(settings), meta: null }, 200);
  },
);

projectRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/project/data-settings",
    tags: ["Project"],
    summary: "Change the project's data API settings field by field (null: the platform's default)",
    security: PROJECT_SECURITY,
    middleware: [allow("service_role")] as const,
    request: jsonBody(DataSettingsPatch),
    responses: { 200: ok(DataSettings, "The settings in force"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const settings = await c.env.platform.data.settings.update(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: dataSettingsView(settings), meta: null }, 200);
  },
);

projectRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/project/auth-settings",
    tags: ["Project"],
    summary: "The project's auth URL settings: where recovery links may land",
    security: PROJECT_SECURITY,
    middleware: [allow("service_role")] as const,
    responses: { 200: ok(AuthSettings, "The settings in force"), ...failures(401, 403) },
  }),
  async (c) => {
    const s = await c.env.platform.auth.settings.resolve(c.var.project.ref);
    return c.json({ data: { site_url: s.siteUrl, redirect_urls: [...s.redirectUrls] }, meta: null }, 200);
  },
);

projectRoutes.openapi(
  createRoute({
    method: "patch",
    path: "/v1/project/auth-settings",
    tags: ["Project"],
    summary: "Change the project's auth URL settings field by field (null: the platform's default)",
    security: PROJECT_SECURITY,
    middleware: [allow("service_role")] as const,
    request: jsonBody(AuthSettingsPatch),
    responses: { 200: ok(AuthSettings, "The settings in force"), ...failures(400, 401, 403) },
  }),
  async (c) => {
    const s = await c.env.platform.auth.settings.update(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: { site_url: s.siteUrl, redirect_urls: [...s.redirectUrls] }, meta: null }, 200);
  },
);
