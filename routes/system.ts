import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { pgliteHealth } from "../db/pglite_health.ts";
import { describeError, log } from "../services/log.ts";
import type { AppEnv } from "./env.ts";
import { failures, ok } from "./schemas.ts";
import { errors } from "../services/errors.ts";

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
});

/** How long readiness waits for the control database. */
const READY_TIMEOUT_MS = 5000;

/** `work`, or a rejection once `ms` have passed. */
function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

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
      const { dbs, kv } = c.env.platform;
      try {
        await within(dbs.control.query("select 1"), READY_TIMEOUT_MS);
      } catch (err) {
        log.warn("readiness: database unreachable", { cause: describeError(err) });
        throw errors.unavailable("Database is unreachable");
      }
      const embedded = dbs.kind === "pglite" ? pgliteHealth() : null;
      const down = embedded?.instances.find((i) => i.state !== "ok");
      if (down) {
        throw errors.unavailable(
          `Embedded database "${down.name}" is restarting (${down.last_restart?.reason ?? "unknown"})`,
        );
      }
      try {
        await kv.get(["platform", "ready"]);
      } catch (err) {
        log.warn("readiness: kv unreachable", { cause: describeError(err) });
        throw errors.unavailable("Deno KV is unreachable");
      }
      const pglite = embedded
        ? {
          instances: embedded.instances.length,
          restarts: embedded.instances.reduce((n, i) => n + i.restarts, 0),
          stuck_threads: embedded.stuck_threads,
        }
        : undefined;
      return c.json({
        data: { status: "ready" as const, database: "ok" as const, kv: "ok" as const, pglite },
        meta: null,
      }, 200);
    },
  );
