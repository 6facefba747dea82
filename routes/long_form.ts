/** Sub-routes of a function (`/v1/functions/{name}/<sub>`): a path with one of these is always the short form. */
const FUNCTION_SUBROUTES = new Set(["code", "env", "invoke", "logs", "stats"]);
/** Top-level names under `/v1/functions/` reserved for the platform's own routes (never a project). */
const RESERVED = new Set(["jobs", "cron", "alerts", "metrics"]);

/**
 * Splits the long form `/v1/functions/{project_id}/…` into the project and the short path,
 * or returns null for a short-form path. A path is long-form when its first segment is a project and
 * something follows it that is not a function's own sub-route: `/v1/functions/demo/hello/invoke` is
 * long-form, `/v1/functions/demo/invoke` invokes the function "demo" (docs/projects-and-auth.md).
 */
export async function splitLongForm(
  pathname: string,
  isProject: (ref: string) => Promise<boolean>,
): Promise<{ ref: string; path: string } | null> {
  const candidate = longFormCandidate(pathname);
  return candidate && (await isProject(candidate.ref)) ? candidate : null;
}

/**
 * The long-form split of a path if its first segment is a project, or null for a path that is short form
 * whatever projects exist (answered without a lookup: the common case, an invoke, stays synchronous).
 */
export function longFormCandidate(pathname: string): { ref: string; path: string } | null {
  const match = pathname.match(/^\/v1\/functions\/([^/]+)\/(.+)$/);
  if (!match) return null;
  const [, first, rest] = match as unknown as [string, string, string];
  if (RESERVED.has(first)) return null;
  const next = rest.split("/")[0]!;
  if (FUNCTION_SUBROUTES.has(next) && !rest.includes("/")) return null;
  return { ref: first, path: `/v1/functions/${rest}` };
}
