import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { CONSOLE_SESSION_HOURS } from "../services/admin/admins.ts";
import type { Context } from "hono";
import { type Project as ProjectRecord, PROJECT_REF } from "../services/projects/projects.ts";
import { errors } from "../lib/errors.ts";
import { bearerToken, CONSOLE_COOKIE, consoleToken, requireAdmin } from "./middleware/auth.ts";
import type { AppEnv } from "./env.ts";
import { accountLimited, passwordRateLimit } from "./middleware/rate_limit.ts";
import { ADMIN_SECURITY, failures, jsonBody, ok } from "./schemas.ts";

// The same address rule as ADMIN_EMAIL, which admits the generated admin@localhost.
const Login = z.strictObject({
  email: z.email({ pattern: z.regexes.html5Email }).max(320),
  password: z.string().min(1).max(1024),
}).openapi("AdminLogin");
const ConsoleSession = z.object({ token: z.string(), expires_at: z.string() }).openapi("ConsoleSession");

const Project = z.object({
  ref: z.string(),
  name: z.string(),
  created_at: z.string(),
  api_url: z.string(),
}).openapi("Project");

const ProjectWithKeys = Project.extend({ public_key: z.string(), secret_key: z.string() }).openapi(
  "ProjectWithKeys",
);

const CreateProject = z.strictObject({
  ref: z.string().regex(PROJECT_REF, 'Ref must be 1-40 lowercase letters, digits or "-"'),
  name: z.string().min(1).max(200).optional(),
}).openapi("CreateProject");

const RefParam = z.object({
  ref: z.string().openapi({ param: { name: "ref", in: "path" }, example: "demo" }),
});
const Rotate = z.strictObject({ kind: z.enum(["public", "secret"]) }).openapi("RotateKey");

/** Admin console routes: sign-in and project management. */
export const adminRoutes = new OpenAPIHono<AppEnv>();

adminRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/login",
    tags: ["Admin"],
    summary: "Sign in to the console; the token counts as role admin on every project",
    middleware: [passwordRateLimit] as const,
    request: jsonBody(Login),
    responses: {
      200: ok(ConsoleSession, "A console session token (cs_…), valid 12 h"),
      ...failures(400, 401, 429),
    },
  }),
  async (c) => {
    const { email, password } = c.req.valid("json");
    const session = await accountLimited(
      c,
      `admin:${email}`,
      () => c.env.platform.admins.login(email, password),
    );
    setCookie(c, CONSOLE_COOKIE, session.token, {
      httpOnly: true,
      sameSite: "Strict",
      path: "/",
      maxAge: CONSOLE_SESSION_HOURS * 3600,
      secure: new URL(c.req.url).protocol === "https:",
    });
    return c.json({ data: session, meta: null }, 200);
  },
);

adminRoutes.use("/v1/admin/*", async (c, next) => {
  if (c.req.path === "/v1/admin/login") return await next();
  return await requireAdmin(c, next);
});

adminRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/logout",
    tags: ["Admin"],
    summary: "End the console session",
    security: ADMIN_SECURITY,
    responses: { 200: ok(z.null(), "Signed out"), ...failures(401, 403) },
  }),
  async (c) => {
    const token = consoleToken(bearerToken(c.req.header("authorization")), getCookie(c, CONSOLE_COOKIE));
    if (token) await c.env.platform.admins.logout(token);
    deleteCookie(c, CONSOLE_COOKIE, { path: "/" });
    return c.json({ data: null, meta: null }, 200);
  },
);

/** A project as admin routes show it, with the URL its clients call. */
function projectView(c: Context<AppEnv>, p: ProjectRecord) {
  const { BASE_DOMAIN, PUBLIC_URL } = c.env.platform.config;
  const base = new URL(PUBLIC_URL ?? c.req.url);
  const api_url = `${base.protocol}//${p.ref}.${BASE_DOMAIN}${base.port ? `:${base.port}` : ""}`;
  return { ref: p.ref, name: p.name, created_at: p.created_at, api_url };
}

adminRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/projects",
    tags: ["Admin"],
    summary: "List projects",
    security: ADMIN_SECURITY,
    responses: { 200: ok(z.array(Project), "Every project"), ...failures(401, 403) },
  }),
  async (c) => {
    const list = (await c.env.platform.projects.list()).map((p) => projectView(c, p));
    return c.json({ data: list, meta: null }, 200);
  },
);

adminRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/projects",
    tags: ["Admin"],
    summary: "Create a project with its database and keys",
    security: ADMIN_SECURITY,
    request: jsonBody(CreateProject),
    responses: { 201: ok(ProjectWithKeys, "The project and its keys"), ...failures(400, 401, 403, 409) },
  }),
  async (c) => {
    const { projects } = c.env.platform;
    const p = await projects.create(c.req.valid("json"));
    const data = { ...projectView(c, p), ...await projects.keys(p.ref) };
    return c.json({ data, meta: null }, 201);
  },
);

adminRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/projects/{ref}",
    tags: ["Admin"],
    summary: "A project with its current keys",
    security: ADMIN_SECURITY,
    request: { params: RefParam },
    responses: { 200: ok(ProjectWithKeys, "The project and its keys"), ...failures(401, 403, 404) },
  }),
  async (c) => {
    const { projects } = c.env.platform;
    const p = await projects.get(c.req.valid("param").ref);
    const data = { ...projectView(c, p), ...await projects.keys(p.ref) };
    return c.json({ data, meta: null }, 200);
  },
);

adminRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/admin/projects/{ref}",
    tags: ["Admin"],
    summary: "Delete a project, its keys and its database (not the default project)",
    security: ADMIN_SECURITY,
    request: { params: RefParam },
    responses: { 200: ok(z.null(), "Deleted"), ...failures(401, 403, 404, 409) },
  }),
  async (c) => {
    const { ref } = c.req.valid("param");
    if (ref === c.env.platform.config.DEFAULT_PROJECT_REF) {
      throw errors.conflict(`The default project "${ref}" cannot be deleted`);
    }
    await c.env.platform.projects.delete(ref);
    return c.json({ data: null, meta: null }, 200);
  },
);

adminRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/projects/{ref}/keys/rotate",
    tags: ["Admin"],
    summary: "Replace the public or the secret key; the old one stops working",
    security: ADMIN_SECURITY,
    request: { params: RefParam, ...jsonBody(Rotate) },
    responses: {
      200: ok(z.object({ public_key: z.string(), secret_key: z.string() }), "The current keys"),
      ...failures(400, 401, 403, 404),
    },
  }),
  async (c) => {
    const keys = await c.env.platform.projects.rotateKey(c.req.valid("param").ref, c.req.valid("json").kind);
    return c.json({ data: keys, meta: null }, 200);
  },
);
