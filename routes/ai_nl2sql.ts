import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { SqlCaller } from "../services/ai/nl2sql.ts";
import type { AppEnv, Caller } from "./env.ts";
import { limitUsers } from "./ai.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const Nl2SqlRequest = z.strictObject({
  question: z.string().min(1).max(10_000),
  dialect: z.enum(["postgresql", "postgres"]).optional(),
  examples: z.array(
    z.strictObject({ question: z.string().min(1).max(10_000), sql: z.string().min(1).max(20_000) }),
  )
    .max(20).optional(),
  limit: z.number().int().min(1).max(1000).optional().openapi({
    description: "Rows returned at most, default 100",
  }),
  execute: z.boolean().optional().openapi({ description: "Run the SQL and return rows (default false)" }),
  model: z.string().min(1).max(200).optional(),
  provider: z.string().min(1).max(32).optional(),
}).openapi("AiNl2SqlRequest");

const Nl2SqlResult = z.object({
  sql: z.string(),
  rows: z.array(z.record(z.string(), z.unknown())).optional(),
}).openapi("AiNl2SqlResult");

/** The database role and claims a caller's generated SQL runs with. */
export function sqlCaller(caller: Caller): SqlCaller {
  if (caller.role === "authenticated" && caller.user) {
    return { role: "authenticated", claims: { ...caller.user } };
  }
  if (caller.role === "anon") return { role: "anon", claims: { role: "anon" } };
  return { role: "service_role", claims: { role: "service_role" } };
}

/** NL-to-SQL (docs/ai.md). */
export const aiNl2SqlRoutes = new OpenAPIHono<AppEnv>();

aiNl2SqlRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/nl2sql",
    tags: ["AI"],
    summary: "A question to one read-only SELECT over what the caller can read; run under RLS when asked",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(Nl2SqlRequest),
    responses: {
      200: ok(Nl2SqlResult, "The SQL, and its rows when execute is true"),
      ...failures(400, 401, 403, 503),
    },
  }),
  async (c) => {
    const result = await c.env.platform.ai.nl2sql.ask(
      c.var.project.ref,
      sqlCaller(c.var.caller),
      c.req.valid("json"),
      c.req.raw.signal,
    );
    return c.json({ data: result, meta: null }, 200);
  },
);
