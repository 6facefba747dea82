import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { MIN_PASSWORD_LENGTH, refuseWeakPassword } from "../services/auth/password_policy.ts";
import { errors } from "../lib/errors.ts";
import { authenticate } from "./middleware/auth.ts";
import { resolveProject } from "./middleware/project.ts";
import { accountLimited, passwordRateLimit } from "./middleware/rate_limit.ts";
import type { AppEnv, Caller } from "./env.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const User = z.object({
  id: z.string().uuid(),
  email: z.string(),
  created_at: z.string(),
  user_metadata: z.record(z.string(), z.unknown()),
}).openapi("User");

const Session = z.object({
  access_token: z.string(),
  token_type: z.literal("bearer"),
  expires_in: z.number().int(),
  expires_at: z.number().int(),
  refresh_token: z.string(),
}).openapi("Session");

const UserSession = z.object({ user: User, session: Session }).openapi("UserSession");

const Email = z.email().max(320);
const Password = z.string()
  .min(MIN_PASSWORD_LENGTH, `Password must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(1024)
  .superRefine(refuseWeakPassword);

const SignUp = z.strictObject({
  email: Email,
  password: Password,
  data: z.record(z.string(), z.unknown()).optional().openapi({ description: "User metadata" }),
}).openapi("SignUp");

const TokenGrant = z.discriminatedUnion("grant_type", [
  z.strictObject({ grant_type: z.literal("password"), email: Email, password: z.string().min(1).max(1024) }),
  z.strictObject({ grant_type: z.literal("refresh_token"), refresh_token: z.string().min(1).max(512) }),
]).openapi("TokenGrant");

const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

function requireUser(caller: Caller) {
  if (!caller.user) {
    throw errors.unauthorized(
      'This route needs a signed-in user: send "Authorization: Bearer <access_token>"',
    );
  }
  return caller.user;
}

/** Sign-up and sessions (docs/projects-and-auth.md). */
export const authRoutes = new OpenAPIHono<AppEnv>();
authRoutes.use("/v1/auth/*", resolveProject);

authRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/auth/.well-known/jwks.json",
    tags: ["Auth"],
    summary: "Public keys that verify the project's access tokens",
    responses: {
      200: { content: { "application/json": { schema: Jwks } }, description: "A JSON Web Key Set" },
    },
  }),
  (c) => c.json({ keys: [c.var.project.jwt_public_jwk as Record<string, unknown>] }, 200),
);

authRoutes.use("/v1/auth/*", authenticate);

authRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/auth/signup",
    tags: ["Auth"],
    summary: "Create a user and sign it in",
    middleware: [passwordRateLimit] as const,
    security: PROJECT_SECURITY,
    request: jsonBody(SignUp),
    responses: { 200: ok(UserSession, "The user and its session"), ...failures(400, 401, 409, 429) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const result = await c.env.platform.auth.signUp(c.var.project, body);
    return c.json({ data: result, meta: null }, 200);
  },
);

authRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/auth/token",
    tags: ["Auth"],
    summary: "Sign in with a password, or exchange a refresh token (it rotates; reuse revokes the session)",
    middleware: [passwordRateLimit] as const,
    security: PROJECT_SECURITY,
    request: jsonBody(TokenGrant),
    responses: { 200: ok(UserSession, "The user and a new session"), ...failures(400, 401, 429) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const { auth } = c.env.platform;
    const project = c.var.project;
    const result = body.grant_type === "password"
      ? await accountLimited(
        c,
        `user:${project.ref}:${body.email}`,
        () => auth.signInWithPassword(project, body.email, body.password),
      )
      : await auth.refresh(project, body.refresh_token);
    return c.json({ data: result, meta: null }, 200);
  },
);

authRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/auth/user",
    tags: ["Auth"],
    summary: "The signed-in user",
    security: PROJECT_SECURITY,
    responses: { 200: ok(User, "The user"), ...failures(401) },
  }),
  async (c) => {
    const user = await c.env.platform.auth.getUser(c.var.project, requireUser(c.var.caller));
    return c.json({ data: user, meta: null }, 200);
  },
);

authRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/auth/logout",
    tags: ["Auth"],
    summary: "End the session (scope=local, default) or every session of the user (scope=global)",
    security: PROJECT_SECURITY,
    request: { query: z.object({ scope: z.enum(["local", "global"]).default("local") }) },
    responses: { 200: ok(z.null(), "Signed out"), ...failures(401) },
  }),
  async (c) => {
    const { scope } = c.req.valid("query");
    await c.env.platform.auth.signOut(c.var.project, requireUser(c.var.caller), scope);
    return c.json({ data: null, meta: null }, 200);
  },
);
