import { createMiddleware } from "hono/factory";
import { errors } from "../../lib/errors.ts";
import type { Context } from "hono";
import { type Project, PROJECT_REF } from "../../services/projects/projects.ts";
import type { Platform } from "../../services/platform.ts";
import type { AppEnv, EdgeEnv } from "../env.ts";

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The project ref a host selects: `<ref>.<base domain>` selects `ref`; the bare base domain and
 * any IP address select the default project. Any other host selects nothing (null).
 */
export function projectFromHost(host: string, baseDomain: string, defaultRef: string): string | null {
  let name = host.toLowerCase();
  if (name.startsWith("[")) return defaultRef; // IPv6 literal
  name = name.replace(/:\d+$/, "").replace(/\.$/, "");
  const base = baseDomain.toLowerCase();
  if (name === base || IPV4.test(name)) return defaultRef;
  if (name.endsWith(`.${base}`)) {
    const ref = name.slice(0, -(base.length + 1));
    return PROJECT_REF.test(ref) ? ref : null;
  }
  return null;
}

/** The refs of the hosts seen lately, for the settings they were found under (cleared whole when full). */
let hostRefs = { base: "", defaultRef: "", refs: new Map<string, string | null>() };
const MAX_HOST_REFS = 1024;

/** {@linkcode projectFromHost}, remembered: every request asks it, almost always for the same few hosts. */
function refOfHost(host: string, baseDomain: string, defaultRef: string): string | null {
  if (hostRefs.base !== baseDomain || hostRefs.defaultRef !== defaultRef) {
    hostRefs = { base: baseDomain, defaultRef, refs: new Map() };
  }
  let ref = hostRefs.refs.get(host);
  if (ref === undefined) {
    ref = projectFromHost(host, baseDomain, defaultRef);
    if (host.length <= 256) {
      if (hostRefs.refs.size >= MAX_HOST_REFS) hostRefs.refs.clear();
      hostRefs.refs.set(host, ref);
    }
  }
  return ref;
}

/**
 * The project of `req`: the one its long-form path named (`env.project`), else the one its host selects;
 * 404 PROJECT_NOT_FOUND otherwise. Answered synchronously when the project is cached.
 */
export function requestProject(env: EdgeEnv, req: Request): Project | Promise<Project> {
  return env.project ?? projectFor(env.platform, req.headers.get("host") ?? new URL(req.url).host);
}

/** {@linkcode requestProject} of a Hono route's request. */
export function projectOf(c: Context<AppEnv>): Project | Promise<Project> {
  return requestProject(c.env, c.req.raw);
}

/** The project `host` selects: see {@linkcode projectFromHost}. */
function projectFor(platform: Platform, host: string): Project | Promise<Project> {
  const { config, projects } = platform;
  const ref = refOfHost(host, config.BASE_DOMAIN, config.DEFAULT_PROJECT_REF);
  if (!ref) throw errors.projectNotFound(host.replace(/:\d+$/, "").split(".")[0] ?? host);
  const cached = projects.cached(ref);
  if (cached === null) throw errors.projectNotFound(ref);
  return cached ?? projects.get(ref);
}

/** Sets `project` for routes that need the project but no credentials (the JWKS). */
export const resolveProject = createMiddleware<AppEnv>(async (c, next) => {
  c.set("project", await projectOf(c));
  await next();
});
