import { OpenAPIHono } from "@hono/zod-openapi";
import { errors } from "../lib/errors.ts";
import type { Platform } from "../services/platform.ts";
import { PROJECT_REF } from "../services/projects/projects.ts";
import { adminRoutes } from "./admin.ts";
import { aiRoutes } from "./ai.ts";
import { alertRoutes } from "./alerts.ts";
import { aiNl2SqlRoutes } from "./ai_nl2sql.ts";
import { aiRagRoutes } from "./ai_rag.ts";
import { aiSessionRoutes } from "./ai_session.ts";
import { authRoutes } from "./auth.ts";
import { gotrueRoutes } from "./compat/auth.ts";
import { API_VERSION_HEADER } from "./compat/gotrue_errors.ts";
import { gotrueFailure } from "./compat/gotrue_errors.ts";
import {
  FUNCTIONS_MOUNT,
  isFunctionMount,
  RELAY_ERROR_HEADER,
  relayFailure,
  serveFunctionMount,
} from "./compat/functions.ts";
import { dataRoutes } from "./data.ts";
import { docsRoutes } from "./docs.ts";
import { cronRoutes } from "./cron.ts";
import { CONSOLE_API, serveConsoleApi } from "./console/api.ts";
import { crossSite } from "./console/csrf.ts";
import { consoleRoutes } from "./console/mod.ts";
import { functionsRoutes } from "./functions.ts";
import { invokeBody, isInvoke, serveInvoke } from "./invoke.ts";
import { jobRoutes } from "./jobs.ts";
import type { AppEnv, EdgeEnv } from "./env.ts";
import { errorResponse, validationHook } from "./errors.ts";
import { longFormCandidate } from "./long_form.ts";
import { edge, type OwnBody } from "./middleware/edge.ts";
import { pathOf } from "./middleware/path.ts";
import { notificationRoutes } from "./notifications.ts";
import { projectRoutes } from "./project.ts";
import { CachedRouter } from "./router.ts";
import { realtimeRoutes } from "./realtime.ts";
import { REALTIME_API, realtimeApiFailure, realtimeApiRoutes } from "./compat/realtime.ts";
import { systemRoutes } from "./system.ts";

/** Request headers a browser may send (CORS). */
const ALLOW_HEADERS = [
  "apikey",
  "authorization",
  "content-type",
  "x-client-info",
  "prefer",
  "range",
  "accept-profile",
  "content-profile",
  "x-service-invoke-mode",
  "x-request-id",
  "cache-control",
  API_VERSION_HEADER,
  "x-region",
];

/** Response headers a browser may read (CORS). */
const EXPOSE_HEADERS = [
  "x-request-id",
  "content-range",
  "preference-applied",
  "location",
  "retry-after",
  "x-cache",
  "x-cache-similarity",
  RELAY_ERROR_HEADER,
  API_VERSION_HEADER,
  "x-sb-error-code",
];

/** Builds the Hono app of the whole platform (the platform itself reaches it as the env of each request). */
export function createApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook, router: new CachedRouter() });

  // Request bodies are read, capped, timed and checked at the edge (routes/middleware/edge.ts).
  app.route("/", systemRoutes);
  app.route("/", adminRoutes);
  app.route("/", authRoutes);
  app.route("/", gotrueRoutes); // GoTrue's API on /auth/v1, for supabase-js
  app.route("/", projectRoutes);
  app.route("/", dataRoutes);
  app.route("/", realtimeRoutes);
  app.route("/", realtimeApiRoutes); // realtime's HTTP broadcast on /realtime/v1/api, for supabase-js
  app.route("/", notificationRoutes);
  app.route("/", docsRoutes);
  app.route("/", aiRoutes);
  app.route("/", aiRagRoutes);
  app.route("/", aiNl2SqlRoutes);
  app.route("/", aiSessionRoutes);
  app.route("/", jobRoutes);
  app.route("/", cronRoutes);
  app.route("/", alertRoutes);
  app.route("/", consoleRoutes);
  app.route("/", functionsRoutes); // last: jobs, cron and alerts share the /v1/functions/ prefix

  app.openAPIRegistry.registerComponent("securitySchemes", "apikey", {
    type: "apiKey",
    in: "header",
    name: "apikey",
    description: "The project's public key (pk_…, role anon) or secret key (sk_…, role service_role)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "A user access token (JWT, role authenticated) or the secret key",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "console", {
    type: "http",
    scheme: "bearer",
    description: "A console session token (cs_…) from POST /v1/admin/login",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "ticket", {
    type: "http",
    scheme: "bearer",
    description: "An AI session ticket (ait_…) from POST /v1/ai/{project_id}/session, sent without apikey",
  });
  app.doc31("/v1/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Platform API",
      version: "1.0.0",
      description:
        "A Deno-native backend platform: data, auth, functions, jobs, realtime, notifications, AI.",
    },
  });

  app.notFound((c) =>
    errorResponse(c, errors.notFound(`Route ${c.req.method} ${c.req.path} does not exist`))
  );
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

/** The bodies read by their route, after it has checked the caller: invoke's and the functions mount's. */
function ownBody(maxBytes: number): OwnBody {
  const invoke = invokeBody(maxBytes);
  return { ...invoke, accepts: (req) => invoke.accepts(req) || isFunctionMount(pathOf(req.url)) };
}

/** A failure at the edge on a compatibility mount, in that mount's format (null: the platform's). */
function compatFailure(err: unknown, req: Request, requestId: string): Response | null {
  const path = pathOf(req.url);
  if (path.startsWith("/auth/v1/")) return gotrueFailure(err, req, requestId);
  if (isFunctionMount(path)) return relayFailure(err, requestId, path);
  if (path.startsWith(REALTIME_API)) return realtimeApiFailure(err, requestId, path);
  return null;
}

/** A fetch handler: the app behind the long-form rewrite of `/v1/functions/{project_id}/…`. */
export type Handler = (req: Request, info?: { remoteAddr: Deno.Addr }) => Response | Promise<Response>;

/** Builds the platform's fetch handler: the edge in front of the app, behind the long-form rewrite. */
export function createHandler(platform: Platform): Handler {
  const app = createApp();
  const longForm = async (req: Request, env: EdgeEnv, long: { ref: string; path: string }) => {
    const project = PROJECT_REF.test(long.ref) ? await platform.projects.find(long.ref) : null;
    if (!project) return await app.fetch(req, env);
    // The project the path named travels in the env: the app and invoke take it instead of the host's.
    const named: EdgeEnv = { ...env, project };
    if (isInvoke(req, long.path)) return await serveInvoke(req, named, long.path);
    const url = new URL(req.url);
    url.pathname = long.path;
    return await app.fetch(new Request(url, req), named);
  };
  /** A platform path for the project the env names (the console's API): invoke, or the app. */
  const forward = (req: Request, env: EdgeEnv, path: string) =>
    isInvoke(req, path) ? serveInvoke(req, env, path) : app.fetch(req, env);
  return edge(
    {
      platform,
      origins: platform.config.CORS_ORIGINS === "*"
        ? "*"
        : platform.config.CORS_ORIGINS.split(",").map((o) => o.trim()),
      allowHeaders: ALLOW_HEADERS,
      anyRequestHeaders: (req) => isFunctionMount(pathOf(req.url)),
      exposeHeaders: EXPOSE_HEADERS,
      maxBodyBytes: platform.config.MAX_BODY_BYTES,
      bodyTimeoutMs: platform.config.BODY_TIMEOUT_MS,
      ownBody: ownBody(platform.config.INVOKE_MAX_BODY_BYTES),
      failure: compatFailure,
    },
    // Not async on the common path: an extra promise layer per request costs measurable throughput.
    (req, env) => {
      if (req.method !== "GET" && crossSite(req, platform.config.PUBLIC_URL)) {
        throw errors.forbidden(
          "Cross-site request refused: the console session only acts for the console's own pages",
        );
      }
      if (req.url.includes(CONSOLE_API)) {
        const path = pathOf(req.url);
        if (path.startsWith(CONSOLE_API)) return serveConsoleApi(req, env, path, forward);
      }
      if (req.url.includes(FUNCTIONS_MOUNT)) {
        const path = pathOf(req.url);
        if (isFunctionMount(path)) return serveFunctionMount(req, env, path);
      }
      if (!req.url.includes("/v1/functions/")) return app.fetch(req, env);
      const path = pathOf(req.url);
      if (isInvoke(req, path)) return serveInvoke(req, env, path); // `/v1/functions/{name}/invoke`: never long form
      const long = longFormCandidate(path);
      return long ? longForm(req, env, long) : app.fetch(req, env);
    },
  );
}
