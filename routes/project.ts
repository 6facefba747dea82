import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { allow, authenticate } from "./middleware/auth.ts";
import type { AppEnv } from "./env.ts";
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

/** Routes about the project of the request: who am I, and SQL for its owner. */
export const projectRoutes = new OpenAPIHono<AppEnv>();
projectRoutes.use("/v1/project", authenticate);
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
