/** The `Prefer` header of a data request (PostgREST semantics); unknown preferences are ignored. */
export interface Preferences {
  return?: "minimal" | "headers-only" | "representation";
  count?: "exact" | "planned" | "estimated";
  resolution?: "merge-duplicates" | "ignore-duplicates";
  missing?: "default" | "null";
  handling?: "strict" | "lenient";
  maxAffected?: number;
  tx?: "commit" | "rollback";
  /** RPC: `single-object` passes the whole body as the function's one json/jsonb parameter. */
  params?: "single-object";
}

const VALUES: Record<string, readonly string[]> = {
  return: ["minimal", "headers-only", "representation"],
  count: ["exact", "planned", "estimated"],
  resolution: ["merge-duplicates", "ignore-duplicates"],
  missing: ["default", "null"],
  handling: ["strict", "lenient"],
  tx: ["commit", "rollback"],
  params: ["single-object"],
};

/** Parses one or several comma-separated `Prefer` values. */
export function parsePrefer(header: string | null | undefined): Preferences {
  const out: Record<string, unknown> = {};
  if (!header) return out;
  for (const part of header.split(",")) {
    const [rawKey, ...rest] = part.trim().split("=");
    const key = rawKey?.trim().toLowerCase() ?? "";
    const value = rest.join("=").trim();
    if (key === "max-affected") {
      if (/^\d{1,12}$/.test(value)) out.maxAffected = Number(value);
    } else if (VALUES[key]?.includes(value)) {
      out[key] = value;
    }
  }
  return out as Preferences;
}
