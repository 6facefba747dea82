import type { AdminIdentity } from "../services/admin/admins.ts";
import type { UserClaims } from "../services/auth/tokens.ts";
import type { Platform } from "../services/platform.ts";
import type { Project } from "../services/projects/projects.ts";
import type { BodyLimits } from "./middleware/body.ts";

/** The roles of a caller (docs/projects-and-auth.md). */
export type Role = "anon" | "authenticated" | "service_role" | "admin";

/** Who is calling, resolved once per request by the auth middleware. */
export interface Caller {
  project: Project;
  role: Role;
  /** The verified claims of a signed-in user (role authenticated). */
  user?: UserClaims;
  /** The raw bearer token of that user. */
  userToken?: string;
  /** The console admin, for role admin. */
  admin?: AdminIdentity;
}

/** What the edge gives every request, as the Hono app's env (`c.env`): set once, outside the middleware chain. */
export interface EdgeEnv {
  platform: Platform;
  requestId: string;
  /** The connection's peer, when served over a socket. */
  info?: { remoteAddr: Deno.Addr };
  /** The project a long-form path named (`/v1/functions/{project_id}/…`): it wins over the host's. */
  project: Project | undefined;
  /**
   * The limits of this request's body. The edge reads most bodies before the app; a route it leaves the body to
   * (invoke, which checks its caller first) reads it under these.
   */
  body: BodyLimits;
}

/** The Hono environment of every route. */
export interface AppEnv {
  Bindings: EdgeEnv;
  Variables: {
    project: Project;
    caller: Caller;
    admin: AdminIdentity;
    /** Milliseconds spent resolving the caller's credentials (Server-Timing's `jwt`). */
    authMs: number;
  };
}
