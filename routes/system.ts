import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { failures, ok } from "./schemas.ts";

const Health = z.object({ status: z.literal("ok") });
const Ready = z.object({
  status: z.literal("ready"),
  database: z.literal("ok"),
  kv: z.literal("ok"),
  pglite: z.object({
    instances: z.number().int(),
    restarts: z.number().int(),
    stuck_threads: z.number().int()
      .openapi({
        description: "Threads of given-up engines still running: restart the process to free them",
      }),
  }).optional().openapi({ description: "The embedded databases open in this process (PGlite only)" }),
  vector: z.enum(["pgvector", "platform-hnsw", "exact"]).optional().openapi({
    description: "What serves semantic search: pgvector, the platform's own HNSW index, or an exact scan. " +
      "Absent while the default project's embedded database rests (a probe does not open it)",
  }),
});

/** Liveness and readiness, open to anyone (load balancers have no key). */
export const systemRoutes = new OpenAPIHono<AppEnv>()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/health",
      tags: ["System"],
      summary: "Liveness: the process answers",
      responses: { 200: ok(Health, "The process is alive") },
    }),
    (c) => c.json({ data: { status: "ok" as const }, meta: null }, 200),
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/ready",
      tags: ["System"],
      summary: "Readiness: the control database, every embedded database and Deno KV answer",
      responses: { 200: ok(Ready, "Ready to serve"), ...failures(503) },
    }),
    async (c) => {
      const { pglite, vector } = await c.env.platform.health.ready();
      return c.json({
        data: { status: "ready" as const, database: "ok" as const, kv: "ok" as const, pglite, vector },
        meta: null,
      }, 200);
    },
  );
