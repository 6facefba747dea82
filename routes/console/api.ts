import { errors } from "../../lib/errors.ts";
import { PROJECT_REF } from "../../services/projects/projects.ts";
import type { EdgeEnv } from "../env.ts";
import { credentialsOf } from "../middleware/auth.ts";

/** Where the console's client calls a project's API: `/console/api/{ref}/{platform path}`. */
export const CONSOLE_API = "/console/api/";

/** Serves a platform path for the project it names: the app, or invoke (which the edge serves itself). */
export type Forward = (req: Request, env: EdgeEnv, path: string) => Response | Promise<Response>;

/**
 * The console's API: `/console/api/{ref}/v1/…` (or `/rest/v1/…`) is the platform's own JSON API for project
 * `ref`, called with the console session cookie alone. A browser cannot choose the Host header that selects a
 * project, so the console names it in the path, as the long form `/v1/functions/{ref}/…` does. Without a
 * valid session: 401, whatever else the request carries (keys and bearer tokens are dropped, so the console
 * API never answers a key holder). No second implementation: every answer is the JSON API's.
 */
export async function serveConsoleApi(req: Request, env: EdgeEnv, path: string, forward: Forward) {
  const session = credentialsOf(req.headers).cookie;
  const admin = session?.startsWith("cs_") ? await env.platform.admins.verify(session) : null;
  if (!admin) throw errors.unauthorized("The console API needs a console session: sign in at /console");
  const rest = path.slice(CONSOLE_API.length);
  const slash = rest.indexOf("/");
  const ref = slash > 0 ? rest.slice(0, slash) : rest;
  const target = slash > 0 ? rest.slice(slash) : "/";
  const project = PROJECT_REF.test(ref) ? await env.platform.projects.find(ref) : null;
  if (!project) throw errors.projectNotFound(ref);
  const url = new URL(req.url);
  url.pathname = target;
  const headers = new Headers(req.headers);
  headers.delete("apikey");
  headers.delete("authorization");
  const forwarded = new Request(url, { method: req.method, headers, body: req.body, signal: req.signal });
  return await forward(forwarded, { ...env, project }, target);
}
