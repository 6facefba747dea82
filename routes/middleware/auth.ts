import { getCookie } from "hono/cookie";
import { parse as parseCookies } from "hono/utils/cookie";
import { createMiddleware } from "hono/factory";
import type { Context, Next } from "hono";
import type { AdminIdentity } from "../../services/admin/admins.ts";
import { looksLikeJwt, type UserClaims } from "../../services/auth/tokens.ts";
import { errors } from "../../lib/errors.ts";
import type { Platform } from "../../services/platform.ts";
import type { KeyOwner, Project } from "../../services/projects/projects.ts";
import type { AppEnv, Caller, EdgeEnv, Role } from "../env.ts";
import { requestProject } from "./project.ts";

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

/** A lookup the caches could not answer: once it is done, the caller is resolved again. */
type Miss = () => Promise<void>;

const isMiss = (answer: unknown): answer is Miss => typeof answer === "function";

/**
 * The answers a caller's resolution needs — key owners, console sessions, verified user tokens — taken from
 * the services' caches first, so that a request whose answers are all cached is resolved without awaiting
 * anything (the common case, and the hottest path of the platform). An answer the caches lack comes back as
 * a {@linkcode Miss}; the answers fetched by misses are kept here, so resolution always ends.
 */
class Lookups {
  private fetched: Map<string, unknown> | undefined;

  constructor(private readonly platform: Platform) {}

  keyOwner(key: string): KeyOwner | null | Miss {
    const { projects } = this.platform;
    return this.answer(`key:${key}`, projects.cachedKey(key), () => projects.lookupKey(key));
  }

  admin(session: string): AdminIdentity | null | Miss {
    const { admins } = this.platform;
    return this.answer(`admin:${session}`, admins.cached(session), () => admins.verify(session));
  }

  /** The verified claims of a user token, or the error that refused it. */
  user(project: Project, token: string): UserClaims | Error | Miss {
    const { tokens } = this.platform;
    return this.answer(`user:${token}`, tokens.cached(project, token), async () => {
      if (!looksLikeJwt(token)) return errors.invalidToken("Bearer token is not a valid token");
      return await tokens.verify(project, token).catch((err: Error) => err);
    });
  }

  private answer<T>(id: string, cached: T | undefined, fetch: () => Promise<T>): T | Miss {
    if (cached !== undefined) return cached;
    if (this.fetched?.has(id)) return this.fetched.get(id) as T;
    return async () => {
      (this.fetched ??= new Map()).set(id, await fetch());
    };
  }
}

function keyRole(lookups: Lookups, project: Project, key: string): Role | Miss {
  const owner = lookups.keyOwner(key);
  if (isMiss(owner)) return owner;
  if (!owner) throw errors.unauthorized("Invalid API key");
  if (owner.ref !== project.ref) {
    throw errors.unauthorized(`API key does not belong to project "${project.ref}"`);
  }
  return owner.kind === "secret" ? "service_role" : "anon";
}

/** Credentials of a request, as sent. */
export interface Credentials {
  apikey?: string;
  authorization?: string;
  cookie?: string;
}

/** The credentials a request sends: its `apikey` and `authorization` headers and its console cookie. */
export function credentialsOf(headers: Headers): Credentials {
  const cookie = headers.get("cookie");
  return {
    apikey: headers.get("apikey") ?? undefined,
    authorization: headers.get("authorization") ?? undefined,
    cookie: cookie ? parseCookies(cookie, CONSOLE_COOKIE)[CONSOLE_COOKIE] : undefined,
  };
}

/**
 * The caller of a project route (docs/projects-and-auth.md): a console session is admin; the `apikey`
 * header gates the request and gives anon or service_role; a bearer service key gives service_role; a bearer
 * user JWT gives authenticated. Missing, malformed or foreign credentials are 401. A Miss when an answer is
 * not cached.
 */
function callerOf(lookups: Lookups, project: Project, headers: Credentials): Caller | Miss {
  const bearer = bearerToken(headers.authorization);
  if (headers.authorization !== undefined && bearer === undefined) {
    throw errors.unauthorized('Authorization header must be "Bearer <token>"');
  }
  const session = consoleToken(bearer, headers.cookie);
  if (session) {
    const admin = lookups.admin(session);
    if (isMiss(admin)) return admin;
    if (!admin) throw errors.unauthorized("Console session is invalid or expired");
    return { project, role: "admin", admin };
  }
  let role: Role | undefined;
  if (headers.apikey !== undefined) {
    const keyed = keyRole(lookups, project, headers.apikey);
    if (isMiss(keyed)) return keyed;
    role = keyed;
  }
  if (bearer !== undefined) {
    if (bearer.startsWith("sk_") || bearer.startsWith("pk_")) {
      const bearerRole = keyRole(lookups, project, bearer);
      if (isMiss(bearerRole)) return bearerRole;
      // A bearer public key (as supabase-js sends before sign-in) does not lower a secret apikey.
      role = role === "service_role" ? role : bearerRole;
    } else {
      const user = lookups.user(project, bearer);
      if (isMiss(user)) return user;
      if (user instanceof Error) throw user;
      return { project, role: "authenticated", user, userToken: bearer };
    }
  }
  if (!role) {
    throw errors.unauthorized('No API key found in request: send the project key in the "apikey" header');
  }
  return { project, role };
}

/** Resolves the caller of a project route: see {@linkcode callerOf}; what is not cached is looked up. */
export async function resolveCaller(
  platform: Platform,
  project: Project,
  headers: Credentials,
): Promise<Caller> {
  return await callerFor(platform, project, headers);
}

async function resolveMissing(
  lookups: Lookups,
  project: Project,
  headers: Credentials,
  first: Caller | Miss,
): Promise<Caller> {
  let caller = first;
  while (isMiss(caller)) {
    await caller();
    caller = callerOf(lookups, project, headers);
  }
  return caller;
}

/**
 * The project and the caller of a request (the caller carries its project), for the Hono routes
 * ({@linkcode authenticate}) and for invoke, which is served in front of them, alike. Nothing is awaited when
 * the project, the key's owner and a user token's verification are cached: each await costs throughput on the
 * platform's hottest paths. `project`: the request's project when an earlier middleware resolved it already.
 */
export function resolveRequest(env: EdgeEnv, req: Request, project?: Project): Caller | Promise<Caller> {
  const found = project ?? requestProject(env, req);
  const credentials = credentialsOf(req.headers);
  // PostgREST reads a Bearer token only: on its mount another scheme (`Basic …`) is no token, not an error
  // (wai's extractBearerAuth: the first word must be `bearer`, in any case).
  if (
    credentials.authorization !== undefined &&
    credentials.authorization.split(/\s/, 1)[0]!.toLowerCase() !== "bearer" &&
    new URL(req.url).pathname.startsWith("/rest/v1")
  ) credentials.authorization = undefined;
  return found instanceof Promise
    ? found.then((p) => callerFor(env.platform, p, credentials))
    : callerFor(env.platform, found, credentials);
}

/** Sets `project` and `caller` for a project route, in one middleware layer: see {@linkcode resolveRequest}. */
export const authenticate = createMiddleware<AppEnv>((c, next) => {
  // c.get, not c.var: Hono's c.var builds a new object on every access.
  const started = performance.now();
  const caller = resolveRequest(c.env, c.req.raw, c.get("project"));
  return caller instanceof Promise
    ? caller.then((r) => admit(c, r, next, started))
    : admit(c, caller, next, started);
});

function admit(c: Context<AppEnv>, caller: Caller, next: Next, started: number): Promise<void> {
  c.set("authMs", performance.now() - started);
  c.set("project", caller.project);
  c.set("caller", caller);
  return next();
}

/** The caller of a project route (see {@linkcode callerOf}): synchronous when every answer is cached. */
export function callerFor(
  platform: Platform,
  project: Project,
  headers: Credentials,
): Caller | Promise<Caller> {
  const lookups = new Lookups(platform);
  const caller = callerOf(lookups, project, headers);
  if (isMiss(caller)) {
    return resolveMissing(lookups, project, headers, caller).then((resolved) => admitted(platform, resolved));
  }
  return admitted(platform, caller);
}

/** Tells the project service that `caller` is admitted, so its resting database starts opening (a few ns else). */
function admitted(platform: Platform, caller: Caller): Caller {
  platform.projects.admitted(caller.project.ref);
  return caller;
}

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
