import { z } from "zod";
import { ALLOW_NET_ENTRY } from "../../runtime/net_policy.ts";

/** The permissions of a function, with their bounds and defaults (docs/functions.md). */
export interface Permissions {
  allow_net: string[];
  memory_mb: number;
  timeout_secs: number;
  /** CPU time per call (ms), as Supabase's CPU limit: wall-clock time waiting on I/O does not count. */
  cpu_ms: number;
}

/** Defaults of a new function: no network, 128 MB, 30 s, 2 s of CPU per call. */
export const DEFAULT_PERMISSIONS: Permissions = {
  allow_net: [],
  memory_mb: 128,
  timeout_secs: 30,
  cpu_ms: 2000,
};

/** A partial permissions object as sent to POST and PATCH; every field is checked against its bounds. */
export const PermissionsPatch = z.strictObject({
  allow_net: z.array(
    z.string().max(253).regex(
      ALLOW_NET_ENTRY,
      'must be "*", a host name, "*.domain" or an IPv4 address, with an optional ":port"',
    ),
  ).max(100).optional(),
  memory_mb: z.number().int().min(16).max(1024).optional(),
  timeout_secs: z.number().int().min(1).max(300).optional(),
  cpu_ms: z.number().int().min(10).max(60_000).optional(),
});

/** A permissions patch. */
export type PermissionsPatch = z.infer<typeof PermissionsPatch>;

/** Merges a patch into permissions field by field: fields not sent keep their value. */
export function mergePermissions(base: Permissions, patch: PermissionsPatch | undefined): Permissions {
  return {
    allow_net: patch?.allow_net ? [...new Set(patch.allow_net.map((h) => h.toLowerCase()))] : base.allow_net,
    memory_mb: patch?.memory_mb ?? base.memory_mb,
    timeout_secs: patch?.timeout_secs ?? base.timeout_secs,
    cpu_ms: patch?.cpu_ms ?? base.cpu_ms,
  };
}

/**
 * Permissions as read back from a project database. On the embedded default a project's own SQL can write that
 * table (its PGlite instance is its boundary), so nothing stored there is trusted to widen a function's rights:
 * each field is checked against its bounds again, and one that fails them is its default.
 */
export function storedPermissions(raw: unknown): Permissions {
  const stored = (raw !== null && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const field = <K extends keyof Permissions>(key: K): Permissions[K] => {
    const checked = PermissionsPatch.shape[key].safeParse(stored[key]);
    return (checked.success && checked.data !== undefined
      ? checked.data
      : DEFAULT_PERMISSIONS[key]) as Permissions[K];
  };
  return mergePermissions(DEFAULT_PERMISSIONS, {
    allow_net: field("allow_net"),
    memory_mb: field("memory_mb"),
    timeout_secs: field("timeout_secs"),
    cpu_ms: field("cpu_ms"),
  });
}
