import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { describeError, log } from "../services/log.ts";
import type { AppEnv } from "./env.ts";
import { failures, ok } from "./schemas.ts";
import { errors } from "../services/errors.ts";

const Health = z.object({ status: z.literal("ok") });
const Ready = z.object({ status: z.literal("ready"), database: z.literal("ok"), kv: z.literal("ok") });

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
      summary: "Readiness: the control database and Deno KV answer",
      responses: { 200: ok(Ready, "Ready to serve"), ...failures(503) },
    }),
    async (c) => {
      const { dbs, kv } = c.env.platform;
      try {
        await dbs.control.query("select 1");
      } catch (err) {
        log.warn("readiness: database unreachable", { cause: describeError(err) });
        throw errors.unavailable("Database is unreachable");
      }
      try {
        await kv.get(["platform", "ready"]);
      } catch (err) {
        log.warn("readiness: kv unreachable", { cause: describeError(err) });
        throw errors.unavailable("Deno KV is unreachable");
      }
      return c.json({
        data: { status: "ready" as const, database: "ok" as const, kv: "ok" as const },
        meta: null,
      }, 200);
    },
  );
