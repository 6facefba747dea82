import { getCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { looksLikeJwt } from "../../services/auth/tokens.ts";
import { errors } from "../../services/errors.ts";
import type { Platform } from "../../services/platform.ts";
import type { Project } from "../../services/projects/projects.ts";
import type { AppEnv, Caller, Role } from "../env.ts";
import { projectOf } from "./project.ts";

/** The name of the console's HttpOnly session cookie. */
export const CONSOLE_COOKIE = "console_session";

/** The bearer token of a request, if any. */
export function bearerToken(header: string | undefined): string | undefined {
  // By hand, not by a regular expression: this runs on every authenticated request.
  if (header === undefined || header.length < 8 || header.slice(0, 6).toLowerCase() !== "bearer") return;
  if (!WHITESPACE.test(header[6]!)) return;
  const token = header.slice(7).trim();
  return token && !/\s/.test(token) ? token : undefined;
}

const WHITESPACE = /\s/;

/** A console session token from the bearer header or the console cookie. */
export function consoleToken(bearer: string | undefined, cookie: string | undefined): string | undefined {
  if (bearer?.startsWith("cs_")) return bearer;
  return cookie?.startsWith("cs_") ? cookie : undefined;
}

async function keyRole(platform: Platform, project: Project, key: string): Promise<Role> {
  const owner = await platform.projects.lookupKey(key);
  if (!owner) throw errors.unauthorized("Invalid API key");
  if (owner.ref !== project.ref) {
    throw errors.unauthorized(`API key does not belong to project "${project.ref}"`);
  }
  return owner.kind === "secret" ? "service_role" : "anon";
}

/**
 * Resolves the caller of a project route (spec §5): a console session is admin; the `apikey` header gates
 * the request and gives anon or service_role; a bearer service key gives service_role; a bearer user JWT
 * gives authenticated. Missing, malformed or foreign credentials are 401.
 */
export async function resolveCaller(
  platform: Platform,
  project: Project,
  headers: { apikey?: string; authorization?: string; cookie?: string },
): Promise<Caller> {
  const bearer = bearerToken(headers.authorization);
  if (headers.authorization !== undefined && bearer === undefined) {
    throw errors.unauthorized('Authorization header must be "Bearer <token>"');
  }
  const session = consoleToken(bearer, headers.cookie);
  if (session) {
    const admin = await platform.admins.verify(session);
    if (!admin) throw errors.unauthorized("Console session is invalid or expired");
    return { project, role: "admin", admin };
  }
  let role: Role | undefined = headers.apikey !== undefined
    ? await keyRole(platform, project, headers.apikey)
    : undefined;
  if (bearer !== undefined) {
    if (bearer.startsWith("sk_") || bearer.startsWith("pk_")) {
      const bearerRole = await keyRole(platform, project, bearer);
      // A bearer public key (as supabase-js sends before sign-in) does not lower a secret apikey.
      role = role === "service_role" ? role : bearerRole;
    } else {
      // verify() answers from its cache first; only a new token pays for the shape check and the signature.
      const user = platform.tokens.cached(project, bearer) ??
        (looksLikeJwt(bearer) ? await platform.tokens.verify(project, bearer) : undefined);
      if (!user) throw errors.invalidToken("Bearer token is not a valid token");
      return { project, role: "authenticated", user, userToken: bearer };
    }
  }
  if (!role) {
    throw errors.unauthorized('No API key found in request: send the project key in the "apikey" header');
  }
  return { project, role };
}

/**
 * Sets `project` (unless an earlier middleware did) and `caller` for a project route, in one layer: each
 * middleware layer costs throughput on the hottest path of the platform.
 */
export const authenticate = createMiddleware<AppEnv>(async (c, next) => {
  // c.get, not c.var: Hono's c.var builds a new object on every access.
  const project = c.get("project") ?? await projectOf(c);
  c.set("project", project);
  c.set(
    "caller",
    await resolveCaller(c.env.platform, project, {
      apikey: c.req.header("apikey"),
      authorization: c.req.header("authorization"),
      cookie: getCookie(c, CONSOLE_COOKIE),
    }),
  );
  await next();
});

/** Admits only the given roles (admin is always admitted); 403 FORBIDDEN names the role required. */
export function allow(...roles: Role[]) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { role } = c.get("caller");
    if (role !== "admin" && !roles.includes(role)) throw errors.reservedTo(roles.join(" or "));
    await next();
  });
}

/** Admits only a console session (role admin); a project key gets 403, no credentials 401. */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const bearer = bearerToken(c.req.header("authorization"));
  const session = consoleToken(bearer, getCookie(c, CONSOLE_COOKIE));
  if (session) {
    const admin = await c.env.platform.admins.verify(session);
    if (!admin) throw errors.unauthorized("Console session is invalid or expired");
    c.set("admin", admin);
    return await next();
  }
  if (bearer || c.req.header("apikey")) throw errors.reservedTo("admin");
  throw errors.unauthorized("Admin routes need a console session: sign in at POST /v1/admin/login");
});
